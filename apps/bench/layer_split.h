#pragma once
// Where a training step's time goes, layer by layer (Qin et al.'s Table IV): the forward pass is
// run one leaf module at a time with the clock read between them, and an identity op after each
// layer reads the clock when backward reaches it. The graph of a chain is processed in reverse
// order, so the time between two such marks is the backward of the layer between them.
#include <functional>
#include <string>
#include <vector>

#include "core/module.h"

namespace tunecnn {

// One leaf layer of a chain of Sequentials, in forward order.
struct SplitLayer {
  std::string name, kind;  // kind from layer_kind(); "batchnorm+relu" for a fused pair's first
  Module* module = nullptr;
  double forward_s = 0, backward_s = 0;  // summed over the timed steps
  bool fused = false;  // ran inside the layer before it (Module::forward_fused), no time of its own
};

// "conv", "depthwise" (groups == channels), "pointwise" (1x1), "batchnorm", "relu", "pool",
// "linear" or the module's describe() up to its first '('.
std::string layer_kind(const Module& module);

class LayerSplit {
 public:
  explicit LayerSplit(Module& model);  // walks into Sequentials as the network planner does

  // One training step with the clock between layers: forward through every layer, `loss` of the
  // output, backward, then `update` (the optimizer). Adds each layer's forward and backward time;
  // the loss's forward and backward and the update are kept apart.
  void step(const Variable& input, const std::function<Variable(const Variable&)>& loss,
            const std::function<void()>& update);

  const std::vector<SplitLayer>& layers() const { return layers_; }
  double loss_s() const { return loss_s_; }
  double update_s() const { return update_s_; }
  double total_s() const;  // every layer, the loss and the update
  int steps() const { return steps_; }

 private:
  std::vector<SplitLayer> layers_;
  double loss_s_ = 0, update_s_ = 0;
  int steps_ = 0;
};

// Per kind, in first-seen order: {kind, forward + backward seconds}.
std::vector<std::pair<std::string, double>> seconds_by_kind(const LayerSplit& split);

}  // namespace tunecnn
