#pragma once
// Three SGD steps of one small network with a wide linear layer, taken two ways from the same
// weights: backward then Sgd::step ("after"), and Sgd::backward_and_step, which takes the wide
// layer's weight gradient in blocks of rows ("inside"). The CPU and GPU suites compare the two.
#include <cstddef>
#include <memory>
#include <vector>

#include "core/allocator.h"
#include "core/init.h"
#include "core/module.h"
#include "core/rng.h"
#include "core/sgd.h"
#include "ops/linear.h"
#include "ops/relu.h"
#include "ops/softmax_cross_entropy.h"

namespace tunecnn::testing {

struct RowBlockSteps {
  std::vector<NamedVariable> after, inside;                 // the parameters of each way
  std::vector<NamedTensor> after_momentum, inside_momentum;  // each optimizer's state
  std::size_t gradients_at_peak = 0;  // the last "inside" step's gradient bytes at its peak
};

inline RowBlockSteps step_a_wide_layer_both_ways(Device device) {
  const auto wide_net = [device](std::uint64_t seed) {
    Rng rng(seed);
    auto net = std::make_shared<Sequential>();
    net->add(std::make_shared<Linear>(2048, 1024, rng)).add(std::make_shared<ReLU>()).add(std::make_shared<Linear>(1024, 10, rng));
    net->to(device);
    return net;
  };
  auto after = wide_net(11), inside = wide_net(11);
  const SgdOptions options{.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-3, .nesterov = true};
  Sgd sgd_after(after->parameters(), options), sgd_inside(inside->parameters(), options);
  Allocator& allocator = allocator_for(device);
  Rng data_rng(12);
  RowBlockSteps steps;
  for (int step = 0; step < 3; ++step) {
    Tensor x = Tensor::empty({4, 2048});
    uniform_fill(x, -1, 1, data_rng);
    x = x.to(device);
    const std::vector<std::int32_t> labels{0, 3, 3, 9};
    sgd_after.zero_grad();
    softmax_cross_entropy(after->forward(Variable(x)), labels).backward();
    sgd_after.step();
    sgd_inside.zero_grad();
    Variable loss = softmax_cross_entropy(inside->forward(Variable(x)), labels);
    const std::size_t before = allocator.stats().current_by_use[static_cast<int>(MemoryUse::gradients)];
    allocator.reset_peak();
    sgd_inside.backward_and_step(loss);
    steps.gradients_at_peak = allocator.stats().at_peak_by_use[static_cast<int>(MemoryUse::gradients)] - before;
  }
  steps.after = after->parameters();
  steps.inside = inside->parameters();
  steps.after_momentum = sgd_after.state();
  steps.inside_momentum = sgd_inside.state();
  return steps;
}

}  // namespace tunecnn::testing
