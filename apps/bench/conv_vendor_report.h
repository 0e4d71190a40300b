#pragma once
// `bench conv`'s comparison of our algorithms with the CPU's vendor library: per layer and
// direction, the fastest of our own solvers, oneDNN's fastest implementation and PyTorch, with
// the ratios. Printed when oneDNN's solvers were timed.
#include <iosfwd>
#include <string_view>
#include <vector>

#include "apps/bench/conv_results.h"
#include "models/conv_layers.h"

namespace tunecnn {

// oneDNN's solvers (ops/conv/onednn.h), as against the ones that implement the papers' algorithms.
bool is_onednn_solver(std::string_view solver);

void print_onednn_comparison(std::ostream& out, const std::vector<ConvBenchRow>& rows,
                             const std::vector<ConvLayer>& layers, const std::vector<Direction>& dirs);

}  // namespace tunecnn
