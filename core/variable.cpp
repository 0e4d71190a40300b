#include "core/variable.h"

#include <unordered_map>
#include <unordered_set>

#include "core/allocation_trace.h"
#include "core/allocator.h"
#include "core/tensor_math.h"

namespace tunecnn {
namespace {
thread_local bool g_grad_enabled = true;
bool g_recompute_activations = false;
}

bool grad_enabled() { return g_grad_enabled; }
bool recompute_activations() { return g_recompute_activations; }
void set_recompute_activations(bool on) { g_recompute_activations = on; }

NoGradGuard::NoGradGuard() : previous_(g_grad_enabled) { g_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { g_grad_enabled = previous_; }

Variable::Variable(Tensor data, bool requires_grad) : node_(std::make_shared<Node>()) {
  node_->data = std::move(data);
  node_->requires_grad = requires_grad;
}

Variable::Variable(Tensor data, std::vector<Variable> inputs, BackwardFn backward)
    : Variable(std::move(data), false) {
  if (!g_grad_enabled) return;
  for (const Variable& input : inputs) node_->requires_grad |= input.requires_grad();
  if (!node_->requires_grad) return;
  node_->inputs = std::move(inputs);
  node_->backward = std::move(backward);
}

namespace {

// A released activation, rebuilt where it is first read again: counted as an activation, also
// inside backward.
void rebuild_if_released(Tensor& data, const std::function<Tensor()>& recompute) {
  if (data.defined() || !recompute) return;
  const MemoryUseScope counted_as(MemoryUse::activations);
  data = recompute();
}

}  // namespace

const Tensor& Variable::data() const {
  TUNECNN_CHECK(node_, "use of an undefined Variable");
  rebuild_if_released(node_->data, node_->recompute);
  return node_->data;
}

Tensor& Variable::data() {
  TUNECNN_CHECK(node_, "use of an undefined Variable");
  rebuild_if_released(node_->data, node_->recompute);
  return node_->data;
}

void Variable::set_recompute(std::function<Tensor()> recompute) {
  TUNECNN_CHECK(node_, "use of an undefined Variable");
  node_->recompute = std::move(recompute);
}

void Variable::release_data() {
  if (recomputable()) node_->data.release_storage();
}

const Tensor& Variable::grad() const {
  TUNECNN_CHECK(node_, "use of an undefined Variable");
  return node_->grad;
}

bool Variable::has_grad() const { return node_ && node_->grad.defined(); }
bool Variable::requires_grad() const { return node_ && node_->requires_grad; }

void Variable::add_grad(Tensor g) {
  if (!requires_grad()) return;
  TUNECNN_CHECK(g.numel() == node_->data.numel() && g.layout() == node_->data.layout(), "gradient ",
                g.describe(), " does not match variable ", node_->data.describe());
  if (!node_->grad.defined()) {
    node_->grad = std::move(g);
  } else {
    // Out of place: the first gradient may share storage with another node's gradient.
    node_->grad = add(node_->grad, g);
  }
}

void Variable::zero_grad() {
  if (node_) node_->grad = Tensor();
}

void Variable::backward() { backward(GradReadyFn{}); }

void Variable::backward(const GradReadyFn& on_grad_ready, const GradRowsFn& on_grad_rows) {
  TUNECNN_CHECK(data().numel() == 1, "backward() without a gradient needs a one-element result, got ",
                data().describe());
  backward(Tensor::full(data().shape(), 1.0, data().dtype()), on_grad_ready, on_grad_rows);
}

void Variable::backward(const Tensor& grad) { backward(grad, GradReadyFn{}, GradRowsFn{}); }

std::vector<std::shared_ptr<Variable::Node>> Variable::topological_order() {
  // Iterative DFS post-order: deep networks must not overflow the stack. Owning pointers, because
  // backward() drops each node's inputs as it goes.
  std::vector<std::shared_ptr<Node>> order;
  std::unordered_set<Node*> seen{node_.get()};
  std::vector<std::pair<std::shared_ptr<Node>, std::size_t>> stack{{node_, 0}};
  while (!stack.empty()) {
    auto& [node, next_input] = stack.back();
    if (next_input < node->inputs.size()) {
      std::shared_ptr<Node> child = node->inputs[next_input++].node_;
      if (child && child->requires_grad && seen.insert(child.get()).second)
        stack.push_back({std::move(child), 0});
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }
  return order;  // inputs before the nodes that use them
}

namespace {

// The backward pass running on this thread with a GradRowsFn: it, and how many ops use each leaf.
struct RowsTaking {
  const Variable::GradRowsFn* take = nullptr;
  std::unordered_map<const void*, int> uses;
};
thread_local RowsTaking* this_threads_rows_taking = nullptr;

class RowsTakingScope {
 public:
  explicit RowsTakingScope(RowsTaking* taking) : outer_(this_threads_rows_taking) { this_threads_rows_taking = taking; }
  ~RowsTakingScope() { this_threads_rows_taking = outer_; }
  RowsTakingScope(const RowsTakingScope&) = delete;
  RowsTakingScope& operator=(const RowsTakingScope&) = delete;

 private:
  RowsTaking* outer_;
};

}  // namespace

const Variable::GradRowsFn* Variable::grad_rows_taker(const Variable& leaf) {
  const RowsTaking* taking = this_threads_rows_taking;
  if (taking == nullptr || !leaf.node_ || leaf.node_->backward || !leaf.node_->inputs.empty() ||
      !leaf.node_->requires_grad || leaf.node_->grad.defined())
    return nullptr;
  const auto uses = taking->uses.find(leaf.node_.get());
  return uses != taking->uses.end() && uses->second == 1 ? taking->take : nullptr;
}

void Variable::backward(const Tensor& grad, const GradReadyFn& on_grad_ready, const GradRowsFn& on_grad_rows) {
  TUNECNN_CHECK(requires_grad(), "backward() on a result that does not require grad");
  const TraceMark traced(kBackwardMark);  // where a recorded step's backward begins
  const MemoryUseScope counted_as(MemoryUse::gradients);
  add_grad(grad.clone());
  std::vector<std::shared_ptr<Node>> order = topological_order();
  RowsTaking taking;
  if (on_grad_rows) {
    taking.take = &on_grad_rows;
    for (const auto& node : order)
      for (const Variable& input : node->inputs)
        if (input.node_ && input.node_->requires_grad) ++taking.uses[input.node_.get()];
  }
  const RowsTakingScope rows_taking(on_grad_rows ? &taking : nullptr);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    std::shared_ptr<Node> node = std::move(*it);  // released at the end of this iteration
    // A leaf comes before every node that uses it in the topological order, so by the time the
    // reversed walk reaches it, all of its gradient has been added.
    const bool leaf = node->inputs.empty() && !node->backward;
    if (leaf && on_grad_ready && node != node_) on_grad_ready(Variable(node));
    if (!node->backward || !node->grad.defined()) continue;
    node->backward(node->inputs, node->grad);
    // Free the graph as we go: a second backward() through it is an error, not a silent reuse.
    node->backward = nullptr;
    node->inputs.clear();
    node->recompute = nullptr;  // it holds the op's input
    if (node != node_) node->grad = Tensor();
  }
}

}  // namespace tunecnn
