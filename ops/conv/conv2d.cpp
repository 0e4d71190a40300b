#include "ops/conv/conv2d.h"

#include "core/init.h"
#include "ops/conv/bias.h"
#include "ops/layout/to_layout.h"

namespace tunecnn {
namespace {

void check_bias(const Tensor& bias, const Tensor& weight) {
  TUNECNN_CHECK(bias.ndim() == 1 && bias.dim(0) == weight.dim(0) &&
                    bias.dtype() == weight.dtype() && bias.device() == weight.device(),
                "conv2d bias ", bias.describe(), " does not match weight ", weight.describe());
}

// Plans are cached per problem and device: the same layer may run on the CPU and on the GPU, and
// their solvers differ (the key leaves the device out).
std::string plan_key(const ConvProblem& problem) {
  if (problem.device == Device::cpu) return problem.key();
  return problem.key() + " " + std::string(to_string(problem.device));
}

// Runs one direction into a fresh output tensor, the member `out` of the args. Activations and
// their gradients are in the plan's layout; weights and their gradient always [OC, C/g, KH, KW].
Tensor run_into(const ConvPlan& plan, const ConvProblem& problem, ConvArgs args,
                Tensor ConvArgs::*out, const Shape& shape) {
  const Layout layout = out == &ConvArgs::diff_wei ? Layout::NCHW : plan.layout;
  args.*out = Tensor::empty(shape, problem.dt, problem.device, layout);
  run_conv(plan, problem, args);
  return args.*out;
}

}  // namespace

ConvProblem conv_problem(const Tensor& x, const Tensor& weight, const ConvGeometry& geo) {
  TUNECNN_CHECK(x.ndim() == 4, "conv2d expects a 4-D input [N, C, H, W], got ", x.describe());
  TUNECNN_CHECK(weight.ndim() == 4, "conv2d weight must be [OC, C/groups, KH, KW], got ",
                shape_str(weight.shape()));
  TUNECNN_CHECK(geo.groups > 0 && weight.dim(1) * geo.groups == x.dim(1), "conv2d weight ",
                shape_str(weight.shape()), " with groups ", geo.groups, " does not match input ",
                shape_str(x.shape()));
  TUNECNN_CHECK(x.dtype() == weight.dtype(), "conv2d input ", x.describe(), " and weight ",
                weight.describe(), " differ in dtype");
  TUNECNN_CHECK(x.device() == weight.device(), "conv2d input ", x.describe(), " and weight ",
                weight.describe(), " are on different devices; move the module to the input's "
                "device (Module::to) or the input to the module's");
  ConvProblem p;
  p.mb = static_cast<int>(x.dim(0)), p.ic = static_cast<int>(x.dim(1));
  p.ih = static_cast<int>(x.dim(2)), p.iw = static_cast<int>(x.dim(3));
  p.oc = static_cast<int>(weight.dim(0));
  p.kh = static_cast<int>(weight.dim(2)), p.kw = static_cast<int>(weight.dim(3));
  p.sh = p.sw = geo.stride;
  p.ph = p.pw = geo.padding;
  p.g = geo.groups;
  p.dt = x.dtype();
  p.device = x.device();
  p.validate();
  return p;
}

// The forward pass's output, with its bias: what conv2d makes, and what its recompute makes again.
Tensor forward_output(const ConvPlan& fwd, const ConvProblem& p, const Variable& x, const Variable& weight,
                      const Variable& bias) {
  ConvArgs args;
  args.src = x.data();
  args.wei = weight.data();
  Tensor y = run_into(fwd, p, args, &ConvArgs::dst, p.dst_shape());
  if (bias.defined()) add_bias(y, bias.data());
  return y;
}

Variable conv2d(const Variable& input, const Variable& weight, const Variable& bias,
                const ConvGeometry& geo, const ConvLayerPlan& plan) {
  const ConvProblem p = conv_problem(input.data(), weight.data(), geo);
  if (bias.defined()) check_bias(bias.data(), weight.data());
  const Variable x = to_layout(input, plan.layout());
  Tensor y = forward_output(plan.fwd, p, x, weight, bias);
  std::vector<Variable> inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  auto backward = [p, plan](std::vector<Variable>& in, const Tensor& dy) {
    ConvArgs args;
    args.src = in[0].data();
    args.wei = in[1].data();
    args.diff_dst = dy;
    if (in[0].requires_grad())
      in[0].add_grad(run_into(plan.bwd_data, p.with_dir(Direction::bwd_data), args,
                              &ConvArgs::diff_src, p.src_shape()));
    if (in[1].requires_grad())
      in[1].add_grad(run_into(plan.bwd_weights, p.with_dir(Direction::bwd_weights), args,
                              &ConvArgs::diff_wei, p.wei_shape()));
    if (in.size() > 2 && in[2].requires_grad()) {
      Tensor db = Tensor::empty_like(in[2].data());
      bias_grad(dy, db);
      in[2].add_grad(db);
    }
  };
  Variable out(y, std::move(inputs), backward);
  // A depthwise layer's output is as cheap to make again as BatchNorm's (one pass over it, k*k
  // reads a value): rebuilt where BatchNorm's backward reads it, before this layer's backward, so
  // from the same weights; bitwise the same values, on either device (its plan's forward again).
  const bool depthwise = p.g > 1 && p.g == p.ic && p.g == p.oc;
  if (recompute_activations() && depthwise && out.requires_grad())
    out.set_recompute([x, weight, bias, p, fwd = plan.fwd] { return forward_output(fwd, p, x, weight, bias); });
  return out;
}

Conv2d::Conv2d(int in_channels, int out_channels, int kernel, int stride, int padding, Rng& rng,
               int groups, bool bias)
    : in_channels_(in_channels),
      out_channels_(out_channels),
      kernel_(kernel),
      geo_{stride, padding, groups},
      planner_(std::make_shared<FirstApplicablePlanner>()) {
  TUNECNN_CHECK(in_channels > 0 && out_channels > 0 && kernel > 0 && groups > 0 &&
                    in_channels % groups == 0 && out_channels % groups == 0,
                "Conv2d(", in_channels, "->", out_channels, ", kernel ", kernel, ", groups ",
                groups, "): sizes must be positive and groups must divide both channel counts");
  const std::int64_t fan_in = static_cast<std::int64_t>(in_channels / groups) * kernel * kernel;
  Tensor w = Tensor::empty({out_channels, in_channels / groups, kernel, kernel});
  kaiming_normal(w, fan_in, rng);
  weight_ = register_parameter("weight", w);
  if (bias) bias_ = register_parameter("bias", Tensor::zeros({out_channels}));
}

Variable Conv2d::forward(const Variable& input) {
  return conv2d(input, weight_, bias_, geo_, plan_for(conv_problem(input.data(), weight_.data(), geo_)));
}

const ConvLayerPlan& Conv2d::plan_for(const ConvProblem& fwd_problem) {
  const std::string key = plan_key(fwd_problem);
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    const ConvLayerPlan plan = planner_->plan(fwd_problem);
    plan.validate(fwd_problem);
    it = plans_.emplace(key, std::pair{fwd_problem, plan}).first;
  }
  return it->second.second;
}

ConvProblem Conv2d::problem_for(const Shape& input) const {
  TUNECNN_CHECK(input.size() == 4 && input[1] == in_channels_, describe(), " cannot take an input of shape ",
                shape_str(input));
  ConvProblem p;
  p.mb = static_cast<int>(input[0]), p.ic = in_channels_;
  p.ih = static_cast<int>(input[2]), p.iw = static_cast<int>(input[3]);
  p.oc = out_channels_, p.kh = p.kw = kernel_;
  p.sh = p.sw = geo_.stride;
  p.ph = p.pw = geo_.padding;
  p.g = geo_.groups;
  p.validate();
  return p;
}

void Conv2d::set_plan(const ConvProblem& fwd_problem, const ConvLayerPlan& plan) {
  TUNECNN_CHECK(fwd_problem.dir == Direction::fwd, "Conv2d::set_plan takes the forward problem, got ",
                fwd_problem.key());
  TUNECNN_CHECK(fwd_problem.ic == in_channels_ && fwd_problem.oc == out_channels_ &&
                    fwd_problem.kh == kernel_ && fwd_problem.kw == kernel_ &&
                    fwd_problem.sh == geo_.stride && fwd_problem.ph == geo_.padding &&
                    fwd_problem.g == geo_.groups,
                "Conv2d::set_plan: ", fwd_problem.key(), " is not a problem of ", describe());
  plan.validate(fwd_problem);
  plans_[plan_key(fwd_problem)] = {fwd_problem, plan};
}

std::string Conv2d::describe() const {
  std::string out = "Conv2d(" + std::to_string(in_channels_) + "->" +
                    std::to_string(out_channels_) + ", " + std::to_string(kernel_) + "x" +
                    std::to_string(kernel_) + ", stride " + std::to_string(geo_.stride) + ", pad " +
                    std::to_string(geo_.padding);
  if (geo_.groups > 1) out += ", groups " + std::to_string(geo_.groups);
  if (!bias_.defined()) out += ", no bias";
  return out + ")";
}

void Conv2d::set_planner(std::shared_ptr<ConvPlanner> planner) {
  TUNECNN_CHECK(planner != nullptr, "Conv2d::set_planner: null planner for ", describe());
  planner_ = std::move(planner);
  plans_.clear();
}

std::vector<std::pair<ConvProblem, ConvLayerPlan>> Conv2d::plans() const {
  std::vector<std::pair<ConvProblem, ConvLayerPlan>> out;
  for (const auto& [key, entry] : plans_) out.push_back(entry);
  return out;
}

}  // namespace tunecnn
