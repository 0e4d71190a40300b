#include "autotune/network_planner.h"

#include <algorithm>
#include <numeric>
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
  // From the tuner (resolve_entries): a conv layer's entries, or, under `off` without any, its
  // thresholds plan; a pooling layer's entries when it has some.
  std::optional<LayerEntries> entries;
  std::optional<ConvLayerPlan> untimed;
  std::optional<PoolEntries> pool_entries;
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

// The loss's problem: every model here ends in logits [N, classes] that train and bench feed to
// softmax cross-entropy, in training and in evaluation alike, so it is planned with the layers.
std::vector<SoftmaxProblem> softmax_problems_of(const Shape& output, Device device) {
  if (output.size() != 2) return {};
  return {{static_cast<int>(output[0]), static_cast<int>(output[1]), DType::f32, device}};
}

using ProfileProgress = std::function<void(int, int, const std::string&)>;

// The directions of a layer that run: all three, two (its input is the data), or forward only.
int directions_run(LayerUse use) {
  return use == LayerUse::training ? 3 : use == LayerUse::training_from_data ? 2 : 1;
}

// Under a tuning budget the layers that cost the most are resolved first, so the budget goes where
// the step's time is: conv layers by multiply-adds times the directions they run (an estimate
// that needs no timing), then the rest (pooling is cheap beside them), each in chain order.
// Without a budget, chain order.
std::vector<std::size_t> resolution_order(const TunedPlanner& tuner, const std::vector<ChainLayer>& chain) {
  std::vector<std::size_t> order(chain.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (!tuner.has_budget()) return order;
  const auto work = [&](std::size_t i) {
    const ChainLayer& layer = chain[i];
    return layer.conv != nullptr ? layer.problem.macs() * directions_run(layer.use) : std::int64_t{0};
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return work(a) > work(b); });
  return order;
}

// Every layer's entries (cached, profiled or verified, by the tuner's policy) and the loss's
// solver, whose name it returns; the pass's new entries go to the cache in one write.
std::string resolve_entries(TunedPlanner& tuner, std::vector<ChainLayer>& chain,
                            const std::vector<SoftmaxProblem>& softmax_problems,
                            const ProfileProgress& progress) {
  std::vector<std::pair<ConvProblem, LayerUse>> conv_layers;
  std::vector<std::pair<PoolProblem, LayerUse>> pool_layers;
  for (const ChainLayer& layer : chain) {
    if (layer.conv != nullptr) conv_layers.emplace_back(layer.problem, layer.use);
    if (layer.pool != nullptr) pool_layers.emplace_back(layer.pool_problem, layer.use);
  }
  const int to_profile = tuner.pending(conv_layers, pool_layers, softmax_problems);
  int profiled = 0;
  tuner.on_profile = [&](const std::string& key) {
    if (progress) progress(++profiled, to_profile, key);
  };
  for (std::size_t i : resolution_order(tuner, chain)) {
    ChainLayer& layer = chain[i];
    if (layer.conv != nullptr) layer.entries = tuner.layer_entries(layer.problem, layer.use);
    if (layer.conv != nullptr && !layer.entries) layer.untimed = tuner.untimed_plan(layer.problem);
    if (layer.pool != nullptr) layer.pool_entries = tuner.pool_entries(layer.pool_problem, layer.use);
  }
  std::string softmax_solver;
  for (const SoftmaxProblem& problem : softmax_problems) softmax_solver = tuner.plan(problem).name();
  tuner.on_profile = nullptr;
  tuner.flush();
  return softmax_solver;
}

// The chain DP's nodes: each layer's cost per layout. Conv layers without entries (`off`) keep
// their thresholds plan's layout as their only choice, at no cost, and pooling layers without
// entries may run in any layout they accept, at no cost.
std::vector<LayoutNode> layout_nodes(const TunedPlanner& tuner, const std::vector<ChainLayer>& chain,
                                     Device device) {
  std::vector<LayoutNode> nodes(chain.size());
  for (std::size_t i = 0; i < chain.size(); ++i) {
    const ChainLayer& layer = chain[i];
    if (layer.pool_entries) {
      nodes[i] = tuner.pool_layout_node(layer.pool_problem, *layer.pool_entries);
    } else if (layer.conv == nullptr) {
      nodes[i].cost_ms = accepted_layouts(layer, device);
    } else if (layer.entries) {
      nodes[i] = tuner.layout_node(layer.problem, *layer.entries);
    } else {
      nodes[i].cost_ms[static_cast<int>(layer.untimed->layout())] = 0;
    }
    nodes[i].input = layer.input;
  }
  return nodes;
}

// Installs the plan of a conv or pooling layer in `layout` and reports it.
void install_plan(const TunedPlanner& tuner, const ChainLayer& layer, Layout layout,
                  NetworkPlanReport& report) {
  if (layer.pool != nullptr) {
    const std::optional<PoolLayerPlan> tuned =
        layer.pool_entries ? tuner.pool_plan_in_layout(layer.pool_problem, *layer.pool_entries, layout)
                           : std::nullopt;
    const PoolLayerPlan plan = tuned ? *tuned : FirstApplicablePoolPlanner().plan(layer.pool_problem, layout);
    layer.pool->set_plan(layer.pool_problem, plan);
    report.pools.push_back(pool_report_for(layer, plan, layer.pool_entries));
  }
  if (layer.conv == nullptr) return;
  const ConvLayerPlan plan =
      layer.untimed ? *layer.untimed : *tuner.plan_in_layout(layer.problem, *layer.entries, layout);
  layer.conv->set_plan(layer.problem, plan);
  report.layers.push_back(report_for(layer, plan, layer.entries));
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
  const std::vector<SoftmaxProblem> softmax_problems = softmax_problems_of(output, device);
  NetworkPlanReport report;
  report.softmax_solver = resolve_entries(*tuner_, chain, softmax_problems, on_profile);
  if (!softmax_problems.empty()) report.softmax = softmax_problems.front();

  const std::vector<LayoutNode> nodes = layout_nodes(*tuner_, chain, device);
  const auto transform = [this](const Shape& s, Layout a, Layout b) { return tuner_->transform_cost(s, a, b); };
  // Decided with near-ties merged and, within the noise of the whole step, the fewest layout
  // changes (choose_layouts), so two runs pick the same layouts where the timings cannot tell
  // them apart; reported at the measured costs.
  const LayoutAssignment assignment = choose_layouts(nodes, transform);
  report.total_ms = assignment_ms(nodes, assignment.layouts, transform);
  Layout previous = Layout::NCHW;  // the data arrives NCHW
  for (std::size_t i = 0; i < chain.size(); ++i) {
    if (assignment.layouts[i] != previous)
      report.transform_ms += transform(chain[i].input, previous, assignment.layouts[i]);
    previous = assignment.layouts[i];
    install_plan(*tuner_, chain[i], assignment.layouts[i], report);
  }
  return report;
}

}  // namespace tunecnn
