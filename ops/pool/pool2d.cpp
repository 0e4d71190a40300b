#include "ops/pool/pool2d.h"

#include "ops/layout/to_layout.h"
#include "ops/pool/plan.h"

namespace tunecnn {
namespace {

Variable pool2d(const Variable& input, PoolKind kind, const PoolGeometry& geometry,
                bool count_include_pad) {
  const PoolProblem problem = pool_problem(input.data(), kind, geometry, count_include_pad);
  // A layout no pooling solver runs in is transformed to NCHW, which the direct solver runs in.
  const bool runs_as_is = contains_layout(pool_layouts(problem), input.data().layout());
  const Variable x = runs_as_is ? input : to_layout(input, Layout::NCHW);
  const Tensor& src = x.data();
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
  return pool_problem(x.shape(), x.dtype(), kind, geometry, count_include_pad);
}

PoolProblem pool_problem(const Shape& x, DType dtype, PoolKind kind, const PoolGeometry& geometry,
                         bool count_include_pad) {
  TUNECNN_CHECK(x.size() == 4, "pooling expects a 4-D input [N, C, H, W], got ", shape_str(x));
  PoolProblem p;
  p.kind = kind;
  p.mb = static_cast<int>(x[0]), p.c = static_cast<int>(x[1]);
  p.ih = static_cast<int>(x[2]), p.iw = static_cast<int>(x[3]);
  p.kh = geometry.kh, p.kw = geometry.kw, p.sh = geometry.sh, p.sw = geometry.sw;
  p.ph = geometry.ph, p.pw = geometry.pw;
  p.dt = dtype;
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

std::vector<Layout> pool_input_layouts(const Shape& input, PoolKind kind, const PoolGeometry& g) {
  const PoolProblem problem = pool_problem(input, DType::f32, kind, g, false);
  return pool_layouts(problem);
}

std::vector<Layout> MaxPool2d::input_layouts(const Shape& input) const {
  return pool_input_layouts(input, PoolKind::max, geometry_);
}

std::vector<Layout> AvgPool2d::input_layouts(const Shape& input) const {
  return pool_input_layouts(input, PoolKind::avg, geometry_);
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
