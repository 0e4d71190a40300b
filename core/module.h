#pragma once
// Modules own parameters (Variables that require grad) and buffers (state that is saved but not
// trained), and name them hierarchically ("features.0.weight") for checkpoints and logs.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/variable.h"

namespace tunecnn {

using NamedVariable = std::pair<std::string, Variable>;
using NamedTensor = std::pair<std::string, Tensor>;

class Module {
 public:
  virtual ~Module() = default;
  virtual Variable forward(const Variable& input) = 0;
  virtual std::string describe() const = 0;  // "Conv2d(1->16, 5x5, pad 2)"
  // The memory orders this module takes a 4-D input of `input` shape in without converting it;
  // its output keeps the input's layout. Given another layout, a module converts its input first.
  // The layout planner reads this; conv layers are planned separately. Default: NCHW only.
  virtual std::vector<Layout> input_layouts(const Shape& input) const;
  // True where forward() always returns a tensor of its own that its backward never reads (a
  // conv's or a linear layer's output, batch norm's): the next layer of a Sequential may then
  // overwrite it in place and spare the memory of a second activation (issue 29).
  virtual bool output_reusable_in_place() const { return false; }
  // forward(), allowed to write over `input`'s tensor (ReLU does); the default is forward().
  virtual Variable forward_in_place(const Variable& input) { return forward(input); }
  // next.forward(forward(input)) in one go, where this layer can run `next` inside its own passes
  // over memory (batch norm, a ReLU after it); nullopt where it cannot. A Sequential fuses so,
  // and its layer after the pair may then take the output in place as it could this layer's.
  virtual std::optional<Variable> forward_fused(const Variable& input, const Module& next);
  Variable operator()(const Variable& input) { return forward(input); }

  std::vector<NamedVariable> parameters() const;  // this module's and its children's
  std::vector<NamedTensor> buffers() const;
  void train(bool on = true);  // training vs evaluation mode (dropout, batch norm)
  // Moves every parameter, gradient and buffer to `device` in place (layers keep their handles).
  // Plans made for the old device are replanned at the next forward.
  void to(Device device);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const {
    return children_;
  }

 protected:
  Variable register_parameter(std::string name, Tensor value);
  void register_buffer(std::string name, Tensor value);
  void register_module(std::string name, std::shared_ptr<Module> child);

 private:
  bool training_ = true;
  std::vector<NamedVariable> parameters_;
  std::vector<NamedTensor> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

class Sequential : public Module {
 public:
  Sequential() = default;
  // Adds a layer; `name` defaults to its index.
  Sequential& add(std::shared_ptr<Module> layer, std::string name = "");
  Variable forward(const Variable& input) override;
  std::string describe() const override;
  std::size_t size() const { return layers_.size(); }
  Module& layer(std::size_t i) { return *layers_.at(i); }

 private:
  std::vector<std::shared_ptr<Module>> layers_;
};

std::int64_t parameter_count(const Module& module);

}  // namespace tunecnn
