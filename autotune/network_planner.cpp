#include "autotune/network_planner.h"

#include <set>
#include <utility>

#include "core/variable.h"
#include "ops/conv/conv2d.h"
#include "ops/pool/pool2d.h"

namespace tunecnn {
namespace {

struct ChainLayer {
  std::string name;
  Module* module = nullptr;
  Conv2d* conv = nullptr;  // when the layer is a convolution
  Pool2d* pool = nullptr;  // when it is a pooling layer
  Shape input;
  LayerUse use = LayerUse::training;  // which directions of it run (set_layer_uses)
  ConvProblem problem;  // conv layers only
  PoolProblem pool_problem;  // pooling layers only
};

// Sequential containers are walked into; every other module is one layer of the chain.
void flatten_chain(Module& module, const std::string& prefix, std::vector<ChainLayer>& out) {
  if (dynamic_cast<Sequential*>(&module) != nullptr) {
    for (const auto& [name, child] : module.children())
      flatten_chain(*child, prefix.empty() ? name : prefix + "." + name, out);
    return;
  }
  ChainLayer& layer = out.emplace_back();
  layer.name = prefix;
  layer.module = &module;
  layer.conv = dynamic_cast<Conv2d*>(&module);
  layer.pool = dynamic_cast<Pool2d*>(&module);
}

// Puts a module tree in evaluation mode and, when it ends, each module back in the mode it had
// (pre-order, so a child's own mode wins over its parent's recursive train()).
class EvalModeScope {
 public:
  explicit EvalModeScope(Module& root) {
    record(root);
    root.eval();
  }
  ~EvalModeScope() {
    for (const auto& [module, training] : modes_) module->train(training);
  }
  EvalModeScope(const EvalModeScope&) = delete;
  EvalModeScope& operator=(const EvalModeScope&) = delete;

 private:
  std::vector<std::pair<Module*, bool>> modes_;
  void record(Module& module) {
    modes_.emplace_back(&module, module.is_training());
    for (const auto& [name, child] : module.children()) record(*child);
  }
};

// Each layer's input shape, from a forward pass on one example of zeros in which conv and pooling
// layers are not run (their output shape follows from the problem), so tracing costs almost
// nothing and asks no planner: a layer with the tuner as its planner would otherwise have a
// one-example problem tuned and cached that no step ever runs. Only the batch dimension depends
// on the batch size. Returns the network's output shape.
Shape trace_shapes(std::vector<ChainLayer>& chain, const Shape& input_shape, Device device) {
  NoGradGuard no_grad;
  Shape one = input_shape;
  one[0] = 1;
  Variable x(Tensor::zeros(one, DType::f32, device), false);
  for (ChainLayer& layer : chain) {
    layer.input = x.shape();
    layer.input[0] = input_shape[0];
    if (layer.conv != nullptr) {
      layer.problem = layer.conv->problem_for(layer.input);
      layer.problem.device = device;
      ConvProblem single = layer.problem;
      single.mb = 1;
      x = Variable(Tensor::zeros(single.dst_shape(), DType::f32, device), false);
    } else if (layer.pool != nullptr) {
      layer.pool_problem = layer.pool->problem_for(layer.input);
      layer.pool_problem.device = device;
      PoolProblem single = layer.pool_problem;
      single.mb = 1;
      x = Variable(Tensor::zeros(single.dst_shape(), DType::f32, device), false);
    } else {
      x = layer.module->forward(x);
    }
  }
  Shape out = x.shape();
  out[0] = input_shape[0];
  return out;
}

// A pooling layer takes the layouts of its device's solvers (it has no parameters to say where
// it runs); every other module says itself.
std::array<double, kLayoutCount> accepted_layouts(const ChainLayer& layer, Device device) {
  std::array<double, kLayoutCount> costs{kCannotRun, kCannotRun, kCannotRun};
  if (layer.input.size() != 4) {
    costs[static_cast<int>(Layout::NCHW)] = 0;  // only 4-D tensors have other layouts
    return costs;
  }
  const std::vector<Layout> layouts = layer.pool != nullptr
                                          ? layer.pool->input_layouts(layer.input, device)
                                          : layer.module->input_layouts(layer.input);
  for (Layout layout : layouts) costs[static_cast<int>(layout)] = 0;
  return costs;
}

ConvLayerReport report_for(const ChainLayer& layer, const ConvLayerPlan& plan,
                           const std::optional<LayerEntries>& entries) {
  ConvLayerReport r{layer.name, layer.problem, plan, 0, 0, 0, 0};
  r.input_gradient = layer.use != LayerUse::training_from_data;
  const ConvLayerPlan fallback = FirstApplicablePlanner(Layout::NCHW).plan(layer.problem);
  for (Direction dir : {Direction::fwd, Direction::bwd_data, Direction::bwd_weights}) {
    if (dir == Direction::bwd_data && !r.input_gradient) continue;
    const ConvProblem problem = layer.problem.with_dir(dir);
    const ConvPlan& chosen = plan.for_direction(dir);
    r.workspace_bytes = std::max(r.workspace_bytes, chosen.solver->workspace_bytes(problem, chosen.config));
    if (!entries) continue;
    const ConvPlan& untuned = fallback.for_direction(dir);
    if ((*entries)[static_cast<int>(dir)].key.empty()) continue;  // inference: not tuned
    for (const CandidateResult& c : (*entries)[static_cast<int>(dir)].candidates) {
      if (!c.correct || c.runs == 0) continue;
      ++r.candidates;
      if (c.solver == chosen.solver->name() && c.config == chosen.config && c.layout == chosen.layout)
        r.tuned_ms += c.median_ms;
      if (c.solver == untuned.solver->name() && c.config == untuned.config && c.layout == untuned.layout)
        r.default_ms += c.median_ms;
    }
  }
  return r;
}

PoolLayerReport pool_report_for(const ChainLayer& layer, const PoolLayerPlan& plan,
                                const std::optional<PoolEntries>& entries) {
  PoolLayerReport r{layer.name, layer.pool_problem, plan, 0, 0};
  if (!entries) return r;
  const PoolLayerPlan untuned = FirstApplicablePoolPlanner().plan(layer.pool_problem, Layout::NCHW);
  for (Direction dir : {Direction::fwd, Direction::bwd_data}) {
    const PoolPlan& chosen = dir == Direction::fwd ? plan.fwd : plan.bwd_data;
    const PoolPlan& baseline = dir == Direction::fwd ? untuned.fwd : untuned.bwd_data;
    for (const CandidateResult& c : (*entries)[static_cast<int>(dir)].candidates) {
      if (!c.correct || c.runs == 0) continue;
      if (c.solver == chosen.solver->name() && c.config == chosen.config && c.layout == plan.layout)
        r.tuned_ms += c.median_ms;
      if (c.solver == baseline.solver->name() && c.config == baseline.config && c.layout == Layout::NCHW)
        r.default_ms += c.median_ms;
    }
  }
  return r;
}

// Where the model's parameters live; a model without any runs where its input is put: the CPU.
Device device_of(const Module& model) {
  const std::vector<NamedVariable> params = model.parameters();
  return params.empty() ? Device::cpu : params.front().second.data().device();
}

// In training, the data needs no gradient, so the layers up to and including the first one
// with parameters never run backward to their input: their input-gradient directions are neither
// tuned nor costed (Conv2d computes bwd_data only for an input that requires a gradient).
void set_layer_uses(std::vector<ChainLayer>& chain, LayerUse use) {
  for (ChainLayer& layer : chain) layer.use = use;
  if (use != LayerUse::training) return;
  for (ChainLayer& layer : chain) {
    layer.use = LayerUse::training_from_data;
    if (!layer.module->parameters().empty()) return;
  }
}

}  // namespace

NetworkPlanner::NetworkPlanner(std::shared_ptr<TunedPlanner> tuner) : tuner_(std::move(tuner)) {
  TUNECNN_CHECK(tuner_ != nullptr, "NetworkPlanner: null tuner");
}

NetworkPlanReport NetworkPlanner::plan(Module& model, const Shape& input_shape, LayerUse use) {
  std::vector<ChainLayer> chain;
  flatten_chain(model, "", chain);
  const Device device = device_of(model);
  // In training mode BatchNorm would fold the trace's zeros into its running statistics.
  const Shape output = [&] {
    EvalModeScope eval(model);
    return trace_shapes(chain, input_shape, device);
  }();

  set_layer_uses(chain, use);
  std::vector<std::pair<ConvProblem, LayerUse>> conv_layers;
  std::vector<std::pair<PoolProblem, LayerUse>> pool_layers;
  for (const ChainLayer& layer : chain) {
    if (layer.conv != nullptr) conv_layers.emplace_back(layer.problem, layer.use);
    if (layer.pool != nullptr) pool_layers.emplace_back(layer.pool_problem, layer.use);
  }
  // Every model here ends in logits [N, classes] that train and bench feed to softmax
  // cross-entropy, in training and in evaluation alike: its problem is planned with the layers.
  std::vector<SoftmaxProblem> softmax_problems;
  if (output.size() == 2)
    softmax_problems.push_back({static_cast<int>(output[0]), static_cast<int>(output[1]), DType::f32, device});
  const int to_profile = tuner_->pending(conv_layers, pool_layers, softmax_problems);
  int profiled = 0;
  tuner_->on_profile = [&](const std::string& key) {
    if (on_profile) on_profile(++profiled, to_profile, key);
  };
  std::vector<std::optional<LayerEntries>> entries(chain.size());
  std::vector<std::optional<PoolEntries>> pool_entries(chain.size());
  for (std::size_t i = 0; i < chain.size(); ++i) {
    if (chain[i].conv != nullptr) entries[i] = tuner_->layer_entries(chain[i].problem, chain[i].use);
    if (chain[i].pool != nullptr) pool_entries[i] = tuner_->pool_entries(chain[i].pool_problem, chain[i].use);
  }
  std::string softmax_solver;
  for (const SoftmaxProblem& problem : softmax_problems) softmax_solver = tuner_->plan(problem).name();
  tuner_->on_profile = nullptr;
  tuner_->flush();  // the pass's entries, in one write

  // The chain DP over every layer; conv layers without entries (`off`) keep their thresholds
  // plan's layout as their only choice, at no cost, and pooling layers without entries may run
  // in any layout they accept, at no cost.
  std::vector<LayoutNode> nodes(chain.size());
  std::vector<std::optional<ConvLayerPlan>> untimed(chain.size());
  for (std::size_t i = 0; i < chain.size(); ++i) {
    if (pool_entries[i]) {
      nodes[i] = tuner_->pool_layout_node(chain[i].pool_problem, *pool_entries[i]);
    } else if (chain[i].conv == nullptr) {
      nodes[i].cost_ms = accepted_layouts(chain[i], device);
    } else if (entries[i]) {
      nodes[i] = tuner_->layout_node(chain[i].problem, *entries[i]);
    } else {
      untimed[i] = tuner_->untimed_plan(chain[i].problem);
      nodes[i].cost_ms[static_cast<int>(untimed[i]->layout())] = 0;
    }
    nodes[i].input = chain[i].input;
  }
  const auto transform = [this](const Shape& s, Layout a, Layout b) { return tuner_->transform_cost(s, a, b); };
  // Decided with near-ties merged and, within the noise of the whole step, the fewest layout
  // changes (choose_layouts), so two runs pick the same layouts where the timings cannot tell
  // them apart; reported at the measured costs.
  const LayoutAssignment assignment = choose_layouts(nodes, transform);

  NetworkPlanReport report;
  report.total_ms = assignment_ms(nodes, assignment.layouts, transform);
  if (!softmax_problems.empty()) report.softmax = softmax_problems.front();
  report.softmax_solver = softmax_solver;
  Layout previous = Layout::NCHW;  // the data arrives NCHW
  for (std::size_t i = 0; i < chain.size(); ++i) {
    if (assignment.layouts[i] != previous)
      report.transform_ms += transform(chain[i].input, previous, assignment.layouts[i]);
    previous = assignment.layouts[i];
    if (chain[i].pool != nullptr) {
      const Layout layout = assignment.layouts[i];
      const std::optional<PoolLayerPlan> tuned =
          pool_entries[i] ? tuner_->pool_plan_in_layout(chain[i].pool_problem, *pool_entries[i], layout)
                          : std::nullopt;
      const PoolLayerPlan plan = tuned ? *tuned : FirstApplicablePoolPlanner().plan(chain[i].pool_problem, layout);
      chain[i].pool->set_plan(chain[i].pool_problem, plan);
      report.pools.push_back(pool_report_for(chain[i], plan, pool_entries[i]));
    }
    if (chain[i].conv == nullptr) continue;
    const ConvLayerPlan plan = untimed[i] ? *untimed[i]
                                          : *tuner_->plan_in_layout(chain[i].problem, *entries[i],
                                                                    assignment.layouts[i]);
    chain[i].conv->set_plan(chain[i].problem, plan);
    report.layers.push_back(report_for(chain[i], plan, entries[i]));
  }
  return report;
}

}  // namespace tunecnn
