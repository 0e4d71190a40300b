#include "core/module.h"

#include "core/allocation_trace.h"

namespace tunecnn {

std::vector<Layout> Module::input_layouts(const Shape&) const { return {Layout::NCHW}; }

std::vector<NamedVariable> Module::parameters() const {
  std::vector<NamedVariable> all = parameters_;
  for (const auto& [prefix, child] : children_)
    for (auto& [name, param] : child->parameters()) all.emplace_back(prefix + "." + name, param);
  return all;
}

std::vector<NamedTensor> Module::buffers() const {
  std::vector<NamedTensor> all = buffers_;
  for (const auto& [prefix, child] : children_)
    for (auto& [name, buffer] : child->buffers()) all.emplace_back(prefix + "." + name, buffer);
  return all;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::to(Device device) {
  for (const auto& [name, param] : parameters()) {
    param.data().move_to(device);
    if (param.has_grad()) param.grad().move_to(device);
  }
  for (const auto& [name, buffer] : buffers()) buffer.move_to(device);
}

Variable Module::register_parameter(std::string name, Tensor value) {
  Variable param(std::move(value), /*requires_grad=*/true);
  parameters_.emplace_back(std::move(name), param);
  return param;
}

void Module::register_buffer(std::string name, Tensor value) {
  buffers_.emplace_back(std::move(name), std::move(value));
}

void Module::register_module(std::string name, std::shared_ptr<Module> child) {
  TUNECNN_CHECK(child != nullptr, "register_module(", name, "): null module");
  children_.emplace_back(std::move(name), std::move(child));
}

Sequential& Sequential::add(std::shared_ptr<Module> layer, std::string name) {
  if (name.empty()) name = std::to_string(layers_.size());
  register_module(std::move(name), layer);
  layers_.push_back(std::move(layer));
  return *this;
}

std::optional<Variable> Module::forward_fused(const Variable&, const Module&) { return std::nullopt; }

namespace {

// A recomputable activation made in this Sequential (not its input, the caller's), which the next
// layer has read and not written over into `out`: that layer's backward, its only later reader,
// rebuilds it (Variable::set_recompute).
void release_if_rebuilt_later(Variable& x, const Variable& out, std::size_t i) {
  if (i > 0 && x.recomputable() && !out.data().shares_storage(x.data())) x.release_data();
}

}  // namespace

Variable Sequential::forward(const Variable& input) {
  Variable x = input;
  bool reusable = false;  // never the Sequential's own input: the caller's
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    Module& layer = *layers_[i];
    const LayerScope running(&layer);  // what its blocks are counted to in a recorded step
    if (i + 1 < layers_.size()) {
      if (std::optional<Variable> fused = layer.forward_fused(x, *layers_[i + 1])) {
        release_if_rebuilt_later(x, *fused, i);
        x = std::move(*fused);
        reusable = layer.output_reusable_in_place();
        ++i;
        continue;
      }
    }
    // Only the next layer reads a layer's output here, so where nothing else needs it either,
    // the next layer may take its memory.
    Variable out = reusable ? layer.forward_in_place(x) : layer.forward(x);
    release_if_rebuilt_later(x, out, i);
    x = std::move(out);
    reusable = layer.output_reusable_in_place();
  }
  return x;
}

std::string Sequential::describe() const {
  std::string out = "Sequential(\n";
  for (const auto& [name, child] : children()) out += "  (" + name + "): " + child->describe() + "\n";
  return out + ")";
}

std::int64_t parameter_count(const Module& module) {
  std::int64_t n = 0;
  for (const auto& [name, param] : module.parameters()) n += param.data().numel();
  return n;
}

}  // namespace tunecnn
