#include "apps/bench/layer_split.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include "ops/batch_norm.h"
#include "ops/conv/conv2d.h"
#include "ops/global_avg_pool.h"
#include "ops/linear.h"
#include "ops/lrn.h"
#include "ops/pool/pool2d.h"
#include "ops/relu.h"

namespace tunecnn {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void collect_leaves(Module& module, const std::string& prefix, std::vector<SplitLayer>& out) {
  if (dynamic_cast<Sequential*>(&module) != nullptr) {
    for (const auto& [name, child] : module.children())
      collect_leaves(*child, prefix.empty() ? name : prefix + "." + name, out);
    return;
  }
  out.push_back({prefix, layer_kind(module), &module, 0, 0});
}

// The identity, whose backward stamps the time it is reached and hands the gradient on as is.
Variable mark(const Variable& x, double* reached_s) {
  auto backward = [reached_s](std::vector<Variable>& in, const Tensor& dy) {
    *reached_s = now_s();
    in[0].add_grad(dy);
  };
  return Variable(x.data(), {x}, backward);
}

}  // namespace

std::string layer_kind(const Module& module) {
  if (const auto* conv = dynamic_cast<const Conv2d*>(&module)) {
    if (conv->depthwise()) return "depthwise";
    return conv->kernel() == 1 ? "pointwise" : "conv";
  }
  if (dynamic_cast<const BatchNorm2d*>(&module)) return "batchnorm";
  if (dynamic_cast<const LocalResponseNorm*>(&module)) return "lrn";
  if (dynamic_cast<const ReLU*>(&module)) return "relu";
  if (dynamic_cast<const Pool2d*>(&module) || dynamic_cast<const GlobalAvgPool*>(&module)) return "pool";
  if (dynamic_cast<const Linear*>(&module)) return "linear";
  const std::string text = module.describe();
  return text.substr(0, text.find('('));
}

LayerSplit::LayerSplit(Module& model) {
  collect_leaves(model, "", layers_);
}

void LayerSplit::step(const Variable& input, const std::function<Variable(const Variable&)>& loss,
                      const std::function<void()>& update) {
  std::vector<double> reached(layers_.size(), 0);
  Variable x = input;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const double start = now_s();
    std::optional<Variable> pair;
    if (i + 1 < layers_.size()) pair = layers_[i].module->forward_fused(x, *layers_[i + 1].module);
    if (pair) {
      // The pair's time goes to its first layer; the mark after it stands after both.
      layers_[i].kind = layer_kind(*layers_[i].module) + "+" + layer_kind(*layers_[i + 1].module);
      x = mark(*pair, &reached[++i]);
      layers_[i].fused = true;  // run inside the one before it, as Sequential does
      layers_[i - 1].forward_s += now_s() - start;
      continue;
    }
    x = mark(layers_[i].module->forward(x), &reached[i]);
    layers_[i].forward_s += now_s() - start;
  }
  double start = now_s();
  Variable value = loss(x);
  const double loss_forward = now_s() - start;
  start = now_s();
  value.backward();
  const double end = now_s();
  for (std::size_t i = 1; i < layers_.size(); ++i)
    if (layers_[i].fused) reached[i - 1] = reached[i];  // no time of their own
  // Layer i's backward ran from the mark after it (reached[i]) to the mark after layer i - 1;
  // the first layer's ends with backward() itself, and the loss's runs until the last mark.
  // A layer whose output needs no gradient (nothing trainable before it) has no backward.
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    if (reached[i] == 0) continue;
    layers_[i].backward_s += (i == 0 || reached[i - 1] == 0 ? end : reached[i - 1]) - reached[i];
  }
  loss_s_ += loss_forward + ((reached.empty() || reached.back() == 0 ? end : reached.back()) - start);
  start = now_s();
  update();
  update_s_ += now_s() - start;
  ++steps_;
}

double LayerSplit::total_s() const {
  double total = loss_s_ + update_s_;
  for (const SplitLayer& layer : layers_) total += layer.forward_s + layer.backward_s;
  return total;
}

std::vector<std::pair<std::string, double>> seconds_by_kind(const LayerSplit& split) {
  std::vector<std::pair<std::string, double>> kinds;
  for (const SplitLayer& layer : split.layers()) {
    if (layer.fused) continue;
    auto it = std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == layer.kind; });
    if (it == kinds.end()) it = kinds.insert(kinds.end(), {layer.kind, 0.0});
    it->second += layer.forward_s + layer.backward_s;
  }
  return kinds;
}

}  // namespace tunecnn
