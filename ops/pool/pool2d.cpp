#include "ops/pool/pool2d.h"

#include "ops/layout/to_layout.h"

namespace tunecnn {
namespace {

// The plan for an input that arrives in its own layout, from `planner`: as it is when some
// solver runs that layout, else in NCHW, which the direct solver runs.
PoolLayerPlan plan_for_arriving(PoolPlanner& planner, const PoolProblem& problem, Layout arriving) {
  const bool runs_as_is = contains_layout(pool_layouts(problem), arriving);
  return planner.plan(problem, runs_as_is ? arriving : Layout::NCHW);
}

Variable pool_with_default_plan(const Variable& x, PoolKind kind, const PoolGeometry& geometry,
                                bool count_include_pad) {
  const PoolProblem problem = pool_problem(x.data(), kind, geometry, count_include_pad);
  FirstApplicablePoolPlanner untuned;
  return pool2d(x, problem, plan_for_arriving(untuned, problem, x.data().layout()));
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
  PoolProblem p = pool_problem(x.shape(), x.dtype(), kind, geometry, count_include_pad);
  p.device = x.device();
  return p;
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

Variable pool2d(const Variable& input, const PoolProblem& fwd_problem, const PoolLayerPlan& plan) {
  TUNECNN_CHECK(input.data().shape() == fwd_problem.src_shape() &&
                    input.data().dtype() == fwd_problem.dt &&
                    input.data().device() == fwd_problem.device,
                "pool2d: input ", input.data().describe(), " does not fit ", fwd_problem.key(),
                " on ", to_string(fwd_problem.device));
  const Variable x = to_layout(input, plan.layout);
  const Tensor& src = x.data();
  const PoolProblem problem = fwd_problem.with_dir(Direction::fwd);
  Tensor dst = Tensor::empty(problem.dst_shape(), problem.dt, src.device(), src.layout());
  run_pool(plan.fwd, problem, PoolArgs{.src = src, .dst = dst, .diff_src = {}, .diff_dst = {}});
  // Max backward recomputes the argmax from src (see ops/pool/direct.cpp); average needs no data.
  const Tensor kept_src = problem.kind == PoolKind::max ? src : Tensor();
  auto backward = [problem = problem.with_dir(Direction::bwd_data), bwd = plan.bwd_data, kept_src,
                   layout = src.layout()](std::vector<Variable>& in, const Tensor& dy) {
    Tensor dx = Tensor::empty(problem.src_shape(), problem.dt, problem.device, layout);
    run_pool(bwd, problem, PoolArgs{.src = kept_src, .dst = {}, .diff_src = dx, .diff_dst = dy});
    in[0].add_grad(dx);
  };
  return Variable(std::move(dst), {x}, backward);
}

Variable max_pool2d(const Variable& x, PoolGeometry geometry) {
  return pool_with_default_plan(x, PoolKind::max, geometry, false);
}

Variable avg_pool2d(const Variable& x, PoolGeometry geometry, bool count_include_pad) {
  return pool_with_default_plan(x, PoolKind::avg, geometry, count_include_pad);
}

Pool2d::Pool2d(PoolKind kind, PoolGeometry geometry)
    : kind_(kind), geometry_(geometry), planner_(std::make_shared<FirstApplicablePoolPlanner>()) {}

Variable Pool2d::forward(const Variable& input) {
  const PoolProblem problem = pool_problem(input.data(), kind_, geometry_);
  const auto it = plans_.find(problem.key());
  // A plan installed for another device (the model has moved since) is replanned here.
  if (it != plans_.end() && it->second.second.fwd.solver->device() == problem.device)
    return pool2d(input, problem, it->second.second);
  return pool2d(input, problem, plan_for_arriving(*planner_, problem, input.data().layout()));
}

PoolProblem Pool2d::problem_for(const Shape& input) const {
  return pool_problem(input, DType::f32, kind_, geometry_);
}

std::vector<Layout> Pool2d::input_layouts(const Shape& input) const {
  return input_layouts(input, Device::cpu);
}

std::vector<Layout> Pool2d::input_layouts(const Shape& input, Device device) const {
  PoolProblem problem = problem_for(input);
  problem.device = device;
  return pool_layouts(problem);
}

void Pool2d::set_plan(const PoolProblem& fwd_problem, const PoolLayerPlan& plan) {
  TUNECNN_CHECK(fwd_problem.dir == Direction::fwd && fwd_problem.kind == kind_ &&
                    fwd_problem.kh == geometry_.kh && fwd_problem.kw == geometry_.kw &&
                    fwd_problem.sh == geometry_.sh && fwd_problem.sw == geometry_.sw &&
                    fwd_problem.ph == geometry_.ph && fwd_problem.pw == geometry_.pw,
                "Pool2d::set_plan: ", fwd_problem.key(), " is not the forward problem of ", describe());
  TUNECNN_CHECK(plan.fwd.solver != nullptr && plan.bwd_data.solver != nullptr,
                "Pool2d::set_plan: a plan without a solver for ", fwd_problem.key());
  plans_[fwd_problem.key()] = {fwd_problem, plan};
}

void Pool2d::set_planner(std::shared_ptr<PoolPlanner> planner) {
  TUNECNN_CHECK(planner != nullptr, "Pool2d::set_planner: null planner for ", describe());
  planner_ = std::move(planner);
  plans_.clear();
}

std::vector<std::pair<PoolProblem, PoolLayerPlan>> Pool2d::plans() const {
  std::vector<std::pair<PoolProblem, PoolLayerPlan>> out;
  for (const auto& [key, entry] : plans_) out.push_back(entry);
  return out;
}

std::string Pool2d::describe() const {
  return geometry_str(kind_ == PoolKind::max ? "MaxPool2d" : "AvgPool2d", geometry_);
}

}  // namespace tunecnn
