#include "ops/pool/pool2d.h"

#include "ops/pool/plan.h"

namespace tunecnn {
namespace {

Variable pool2d(const Variable& x, PoolKind kind, const PoolGeometry& geometry,
                bool count_include_pad) {
  const Tensor& src = x.data();
  const PoolProblem problem = pool_problem(src, kind, geometry, count_include_pad);
  const PoolLayerPlan plan = default_pool_planner()->plan(problem, src.layout());
  Tensor dst = Tensor::empty(problem.dst_shape(), problem.dt, Device::cpu, src.layout());
  run_pool(plan.fwd, problem, PoolArgs{.src = src, .dst = dst, .diff_src = {}, .diff_dst = {}});
  // Max backward recomputes the argmax from src (see ops/pool/direct.cpp); average needs no data.
  const Tensor kept_src = kind == PoolKind::max ? src : Tensor();
  auto backward = [problem = problem.with_dir(Direction::bwd_data), bwd = plan.bwd_data, kept_src,
                   layout = src.layout()](std::vector<Variable>& in, const Tensor& dy) {
    Tensor dx = Tensor::empty(problem.src_shape(), problem.dt, Device::cpu, layout);
    run_pool(bwd, problem, PoolArgs{.src = kept_src, .dst = {}, .diff_src = dx, .diff_dst = dy});
    in[0].add_grad(dx);
  };
  return Variable(std::move(dst), {x}, backward);
}

std::string geometry_str(const char* name, const PoolGeometry& g) {
  std::string text = std::string(name) + "(" + std::to_string(g.kh) + "x" + std::to_string(g.kw) +
                     ", stride " + std::to_string(g.sh);
  if (g.ph > 0) text += ", pad " + std::to_string(g.ph);
  return text + ")";
}

}  // namespace

PoolProblem pool_problem(const Tensor& x, PoolKind kind, const PoolGeometry& geometry,
                         bool count_include_pad) {
  TUNECNN_CHECK(x.ndim() == 4, "pooling expects a 4-D input [N, C, H, W], got ",
                shape_str(x.shape()));
  PoolProblem p;
  p.kind = kind;
  p.mb = static_cast<int>(x.dim(0)), p.c = static_cast<int>(x.dim(1));
  p.ih = static_cast<int>(x.dim(2)), p.iw = static_cast<int>(x.dim(3));
  p.kh = geometry.kh, p.kw = geometry.kw, p.sh = geometry.sh, p.sw = geometry.sw;
  p.ph = geometry.ph, p.pw = geometry.pw;
  p.dt = x.dtype();
  p.count_include_pad = count_include_pad;
  p.validate();
  return p;
}

Variable max_pool2d(const Variable& x, PoolGeometry geometry) {
  return pool2d(x, PoolKind::max, geometry, false);
}

Variable avg_pool2d(const Variable& x, PoolGeometry geometry, bool count_include_pad) {
  return pool2d(x, PoolKind::avg, geometry, count_include_pad);
}

MaxPool2d::MaxPool2d(int kernel, int stride, int padding)
    : geometry_(PoolGeometry::square(kernel, stride, padding)) {}

std::string MaxPool2d::describe() const {
  return geometry_str("MaxPool2d", geometry_);
}

AvgPool2d::AvgPool2d(int kernel, int stride, int padding)
    : geometry_(PoolGeometry::square(kernel, stride, padding)) {}

std::string AvgPool2d::describe() const {
  return geometry_str("AvgPool2d", geometry_);
}

}  // namespace tunecnn
