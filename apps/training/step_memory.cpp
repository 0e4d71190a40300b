#include "apps/training/step_memory.h"

#include <algorithm>
#include <any>
#include <cmath>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "core/allocation_trace.h"
#include "core/error.h"
#include "core/init.h"
#include "core/rng.h"
#include "ops/conv/conv2d.h"
#include "ops/pool/pool2d.h"
#include "ops/softmax_cross_entropy.h"

namespace tunecnn {
namespace {

// The two batches a step is recorded at: BatchNorm needs two examples, and 2 and 4 take the
// same code paths as larger batches.
constexpr int kSmallBatch = 2;
constexpr int kLargerBatch = 4;

struct LayerPair {
  std::string name;
  Module* real = nullptr;
  Module* copy = nullptr;
};

// The leaves of two models of one structure, side by side, named as the network planner names
// them (nested Sequentials walked into).
void pair_layers(Module& real, Module& copy, const std::string& name, std::vector<LayerPair>& out) {
  const auto& a = real.children();
  const auto& b = copy.children();
  TUNECNN_CHECK(a.size() == b.size(), "the model's copy for predicting memory differs from it at '", name, "'");
  if (a.empty()) {
    out.push_back({name, &real, &copy});
    return;
  }
  for (std::size_t i = 0; i < a.size(); ++i)
    pair_layers(*a[i].second, *b[i].second, name.empty() ? a[i].first : name + "." + a[i].first, out);
}

// The copy reads the real model's parameters instead of its own: the step it takes updates no
// parameter. Its own are built zeroed, not drawn (AlexNet: 61 million normal draws), and freed
// before its steps, whose blocks then reuse them. Buffers (BatchNorm's running statistics, which
// a training forward updates) stay the copy's own.
void share_parameters(Module& real, Module& copy) {
  std::vector<NamedVariable> shared = real.parameters(), own = copy.parameters();
  TUNECNN_CHECK(shared.size() == own.size(), "the model's copy for predicting memory has ", own.size(),
                " parameters, the model ", shared.size());
  for (std::size_t i = 0; i < own.size(); ++i) {
    Tensor& data = own[i].second.data();
    const Tensor& real_data = shared[i].second.data();
    TUNECNN_CHECK(own[i].first == shared[i].first && data.shape() == real_data.shape() &&
                      data.dtype() == real_data.dtype(),
                  "the model's copy for predicting memory differs from it at parameter '", shared[i].first, "'");
    data = real_data;
  }
}

// The copy's conv layer plans in the layout the real layer runs the real batch in, with the
// untuned solvers there: their workspaces are replaced in the replay, and nothing else a
// solver does allocates.
class FollowingConvPlanner final : public ConvPlanner {
 public:
  FollowingConvPlanner(Conv2d& real, int batch) : real_(real), batch_(batch) {}
  ConvLayerPlan plan(const ConvProblem& fwd_problem) override {
    ConvProblem at_batch = fwd_problem;
    at_batch.mb = batch_;
    return FirstApplicablePlanner(real_.plan_for(at_batch).layout()).plan(fwd_problem);
  }

 private:
  Conv2d& real_;
  int batch_;
};

class FollowingPoolPlanner final : public PoolPlanner {
 public:
  FollowingPoolPlanner(const Pool2d& real, int batch) : real_(real), batch_(batch) {}
  PoolLayerPlan plan(const PoolProblem& fwd_problem, Layout arriving) override {
    PoolProblem at_batch = fwd_problem;
    at_batch.mb = batch_;
    Layout layout = arriving;
    for (const auto& [problem, plan] : real_.plans())
      if (problem.key() == at_batch.key()) layout = plan.layout;
    return FirstApplicablePoolPlanner().plan(fwd_problem, layout);
  }

 private:
  const Pool2d& real_;
  int batch_;
};

struct Recording {
  std::vector<AllocationEvent> events;
  std::vector<std::any> marks;
};

// A training step as train takes it, with every trained parameter's gradient dropped where SGD
// would step on it (whole, or in blocks of rows), and no update: the same blocks as the real
// step after its first, without a second set of momentum buffers (AlexNet: 238 MiB) while the
// prediction runs.
void take_step(Module& model, const std::unordered_set<const void*>& trained, const Tensor& images,
               const std::vector<std::int32_t>& labels) {
  for (auto& [name, parameter] : model.parameters())
    if (trained.count(parameter.id())) parameter.zero_grad();
  Variable loss = softmax_cross_entropy(model.forward(Variable(images)), labels);
  loss.backward(
      [&](Variable parameter) {  // a copy of the handle: the same gradient
        if (trained.count(parameter.id())) parameter.zero_grad();
      },
      [](const Variable&, std::int64_t, const Tensor&) {});
}

std::vector<NamedVariable> trained_parameters_of(Module& model, const StepMemoryQuery& query) {
  return query.trained_parameters ? query.trained_parameters(model) : model.parameters();
}

std::unordered_set<const void*> trained_of(Module& copy, const StepMemoryQuery& query) {
  std::unordered_set<const void*> ids;
  for (const auto& [name, parameter] : trained_parameters_of(copy, query)) ids.insert(parameter.id());
  return ids;
}

// Two steps at `batch`; the second recorded.
Recording record_step(Module& copy, const StepMemoryQuery& query, int batch) {
  Rng rng(1);
  Tensor images = Tensor::empty({batch, query.input[0], query.input[1], query.input[2]});
  uniform_fill(images, -1, 1, rng);
  images = images.to(query.device);
  std::vector<std::int32_t> labels(batch);
  for (auto& label : labels) label = static_cast<std::int32_t>(rng.next_u64() % query.classes);
  const std::unordered_set<const void*> trained = trained_of(copy, query);
  take_step(copy, trained, images, labels);
  AllocationTrace trace;
  {
    const AllocationTraceScope recorded(allocator_for(query.device), trace);
    take_step(copy, trained, images, labels);
  }
  return {trace.events(), trace.marks()};
}

// SGD's momentum buffers: one block per trained parameter of the real model without one yet.
std::size_t optimizer_state_to_come(const StepMemoryQuery& query) {
  if (query.sgd.momentum <= 0) return 0;
  std::size_t bytes = 0;
  for (const auto& [name, parameter] : trained_parameters_of(*query.model, query))
    bytes += Allocator::block_size(parameter.data().nbytes());
  return bytes;
}

// A block's size at `batch`, from its sizes at the two recorded batches (a fixed part and a part
// per example).
std::size_t bytes_at(std::size_t small, std::size_t larger, int batch) {
  const double per_example = (static_cast<double>(larger) - static_cast<double>(small)) / (kLargerBatch - kSmallBatch);
  const double bytes = static_cast<double>(small) + per_example * (batch - kSmallBatch);
  return Allocator::block_size(bytes <= 0 ? 0 : static_cast<std::size_t>(std::llround(bytes)));
}

void check_lined_up(const Recording& small, const Recording& larger) {
  TUNECNN_CHECK(small.events.size() == larger.events.size(), "cannot predict the step's memory: it makes ",
                small.events.size(), " allocation events at batch ", kSmallBatch, " but ", larger.events.size(),
                " at batch ", kLargerBatch);
  for (std::size_t i = 0; i < small.events.size(); ++i) {
    const AllocationEvent& a = small.events[i];
    const AllocationEvent& b = larger.events[i];
    TUNECNN_CHECK(a.kind == b.kind && a.use == b.use && a.mark == b.mark,
                  "cannot predict the step's memory: its allocation events at batches ", kSmallBatch, " and ",
                  kLargerBatch, " differ at event ", i);
  }
}

// The largest workspace any of the real model's conv layers takes for the recorded call's
// problem at the real batch (layers of one shape may run different plans).
std::size_t workspace_at(const std::vector<LayerPair>& layers, ConvProblem problem, int batch) {
  const Direction dir = problem.dir;
  problem.mb = batch;
  const ConvProblem fwd = problem.with_dir(Direction::fwd);
  std::size_t most = 0;
  for (const LayerPair& layer : layers) {
    auto* conv = dynamic_cast<Conv2d*>(layer.real);
    if (conv == nullptr) continue;
    ConvProblem own;
    try {
      own = conv->problem_for({fwd.mb, fwd.ic, fwd.ih, fwd.iw});
    } catch (const Error&) {
      continue;  // a layer of other channels
    }
    if (own.key() != fwd.key()) continue;
    const ConvPlan& plan = conv->plan_for(fwd).for_direction(dir);
    most = std::max(most, plan.solver->workspace_bytes(fwd.with_dir(dir), plan.config));
  }
  return most;
}

// Replays a recorded step at another batch: the timeline of live bytes, with the real plans'
// workspaces in the conv calls.
class Replay {
 public:
  Replay(const Recording& small, const Recording& larger, const std::vector<LayerPair>& layers, int batch)
      : small_(small), larger_(larger), layers_(layers), batch_(batch) {}

  // `start`: what is live before the step, by use.
  StepPeak run(const BytesByUse& start) {
    by_use_ = start;
    for (std::size_t bytes : start) live_ += bytes;
    live_ += carried();
    for (std::size_t i = 0; i < small_.events.size(); ++i) {
      const AllocationEvent& e = small_.events[i];
      switch (e.kind) {
        case AllocationEvent::Kind::mark_begin: begin_mark(e.mark); break;
        case AllocationEvent::Kind::mark_end: end_mark(e.mark); break;
        case AllocationEvent::Kind::allocate: allocate(e, bytes_of(i)); break;
        case AllocationEvent::Kind::free: free(e); break;
      }
    }
    return finish();
  }

 private:
  struct LiveBlock {
    std::size_t bytes;
    MemoryUse use;
    const void* layer;
  };
  const Recording& small_;
  const Recording& larger_;
  const std::vector<LayerPair>& layers_;
  int batch_;
  std::unordered_map<const void*, LiveBlock> blocks_;  // by the small step's pointers
  std::map<const void*, std::size_t> by_layer_, by_layer_at_peak_;
  BytesByUse by_use_{};
  std::size_t live_ = 0;
  std::optional<std::size_t> conv_mark_;  // the conv call being replayed
  bool backward_ = false;
  std::size_t conv_workspace_ = 0;
  StepPeak peak_;

  std::size_t bytes_of(std::size_t i) const { return bytes_at(small_.events[i].bytes, larger_.events[i].bytes, batch_); }
  // A conv call's own workspace is replaced by the real plan's.
  bool replaced(const AllocationEvent& e) const { return conv_mark_ && e.use == MemoryUse::workspaces; }
  const ConvProblem* conv_call(std::size_t mark) const { return std::any_cast<ConvProblem>(&small_.marks[mark]); }
  // Follows the conv calls' marks: what replaced() needs.
  void follow_mark(const AllocationEvent& e) {
    if (e.kind == AllocationEvent::Kind::mark_begin && conv_call(e.mark)) conv_mark_ = e.mark;
    if (e.kind == AllocationEvent::Kind::mark_end && conv_mark_ == e.mark) conv_mark_.reset();
  }

  // Blocks the step frees that it did not make: the step before made them, so they are live
  // from the start.
  std::size_t carried() {
    std::unordered_set<const void*> made;
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < small_.events.size(); ++i) {
      const AllocationEvent& e = small_.events[i];
      follow_mark(e);
      if (replaced(e)) continue;
      if (e.kind == AllocationEvent::Kind::allocate) made.insert(e.block);
      if (e.kind == AllocationEvent::Kind::free && !made.erase(e.block)) {
        const std::size_t block = bytes_of(i);
        bytes += block;
        blocks_[e.block] = {block, e.use, nullptr};
        by_use_[static_cast<int>(e.use)] += block;
      }
    }
    conv_mark_.reset();
    return bytes;
  }

  void begin_mark(std::size_t mark) {
    backward_ |= std::any_cast<BackwardMark>(&small_.marks[mark]) != nullptr;
    const ConvProblem* problem = conv_call(mark);
    if (problem == nullptr) return;
    conv_mark_ = mark;
    conv_workspace_ = Allocator::block_size(workspace_at(layers_, *problem, batch_));
    live_ += conv_workspace_;
    by_use_[static_cast<int>(MemoryUse::workspaces)] += conv_workspace_;
    note_peak();
  }

  void end_mark(std::size_t mark) {
    if (conv_mark_ != mark) return;
    conv_mark_.reset();
    live_ -= conv_workspace_;
    by_use_[static_cast<int>(MemoryUse::workspaces)] -= conv_workspace_;
    conv_workspace_ = 0;
  }

  void allocate(const AllocationEvent& e, std::size_t bytes) {
    if (replaced(e)) return;
    blocks_[e.block] = {bytes, e.use, e.layer};
    live_ += bytes;
    by_use_[static_cast<int>(e.use)] += bytes;
    if (e.layer != nullptr) by_layer_[e.layer] += bytes;
    note_peak();
  }

  void free(const AllocationEvent& e) {
    if (replaced(e)) return;
    const auto it = blocks_.find(e.block);
    TUNECNN_CHECK(it != blocks_.end(), "cannot predict the step's memory: a block freed twice");
    const LiveBlock& block = it->second;
    live_ -= block.bytes;
    by_use_[static_cast<int>(block.use)] -= block.bytes;
    if (block.layer != nullptr) by_layer_[block.layer] -= block.bytes;
    blocks_.erase(it);
  }

  void note_peak() {
    if (live_ <= peak_.bytes) return;
    peak_.bytes = live_;
    peak_.by_use = by_use_;
    peak_.in_backward = backward_;
    by_layer_at_peak_ = by_layer_;
  }

  std::string name_of(const void* layer) const {
    for (const LayerPair& pair : layers_)
      if (pair.copy == layer) return pair.name;
    return "?";
  }

  StepPeak finish() {
    for (const auto& [layer, bytes] : by_layer_at_peak_)
      if (bytes > 0) peak_.layers_keeping.emplace_back(name_of(layer), bytes);
    std::stable_sort(peak_.layers_keeping.begin(), peak_.layers_keeping.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    return peak_;
  }
};

}  // namespace

StepPeak predict_step_peak(const StepMemoryQuery& query) {
  TUNECNN_CHECK(query.model != nullptr && query.make_model, "predict_step_peak: no model");
  TUNECNN_CHECK(query.input.size() == 3 && query.batch > 0 && query.classes > 1, "predict_step_peak: bad query");
  const BytesByUse live_before = allocator_for(query.device).stats().current_by_use;
  std::shared_ptr<Module> copy;
  {
    const NoWeightInitGuard replaced;  // by the real weights, below: zeroed, not drawn
    copy = query.make_model();
  }
  share_parameters(*query.model, *copy);
  copy->to(query.device);  // its buffers: the parameters are the model's, there already
  std::vector<LayerPair> layers;
  pair_layers(*query.model, *copy, "", layers);
  for (const LayerPair& layer : layers) {
    if (auto* conv = dynamic_cast<Conv2d*>(layer.real))
      dynamic_cast<Conv2d&>(*layer.copy).set_planner(std::make_shared<FollowingConvPlanner>(*conv, query.batch));
    if (auto* pool = dynamic_cast<Pool2d*>(layer.real))
      dynamic_cast<Pool2d&>(*layer.copy).set_planner(std::make_shared<FollowingPoolPlanner>(*pool, query.batch));
  }
  const Recording small = record_step(*copy, query, kSmallBatch);
  const Recording larger = record_step(*copy, query, kLargerBatch);
  check_lined_up(small, larger);
  // From what is live now, with the optimizer's state its first step makes and the input batches.
  const std::size_t input_bytes = Allocator::block_size(sizeof(float) * static_cast<std::size_t>(query.batch) *
                                                        query.input[0] * query.input[1] * query.input[2]);
  BytesByUse start = live_before;
  // Momentum the first step makes; a resumed run has it already.
  const std::size_t state = optimizer_state_to_come(query);
  std::size_t& state_live = start[static_cast<int>(MemoryUse::optimizer_state)];
  state_live = std::max(state_live, state);
  start[static_cast<int>(MemoryUse::activations)] += query.batches_in_flight * input_bytes;
  return Replay(small, larger, layers, query.batch).run(start);
}

}  // namespace tunecnn
