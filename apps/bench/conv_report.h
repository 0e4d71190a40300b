#pragma once
// What `bench conv` prints: the rows of each layer x direction as they complete, the summary of
// our best against PyTorch, and the MEC paper's lowered-matrix memory comparison.
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "apps/bench/conv_results.h"
#include "models/conv_layers.h"

namespace tunecnn {

// printf into a string, for the report's fixed-width columns (up to 511 characters).
std::string formatted(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

void print_table_header(std::ostream& out);
// The rows of one layer x direction, then PyTorch's line; `*` marks the fastest row.
void print_table_group(std::ostream& out, const std::vector<ConvBenchRow>& group);
// Per direction, each layer's best against PyTorch; then fwd + bwd_data + bwd_weights totals.
void print_summary(std::ostream& out, const std::vector<ConvBenchRow>& rows,
                   const std::vector<ConvLayer>& layers, const std::vector<Direction>& dirs);

// The MEC paper's comparison on measured rows, per layer x direction: each of `solvers`' fastest
// config (MEC: its best T/solution and chunk; cuDNN: its fastest algorithm) with its median ms
// and workspace MiB, then MEC's time and workspace over im2col_gemm's and cuDNN's.
void print_mec_comparison(std::ostream& out, const std::vector<ConvBenchRow>& rows,
                          const std::vector<ConvLayer>& layers, const std::vector<Direction>& dirs,
                          const std::vector<std::string>& solvers);

// The MEC paper's definitions (Cho and Brand, ICML 2017), in elements for the whole batch:
// im2col lowers to mb*oh*ow * kh*kw*ic, MEC to mb*ow * (ih+2ph)*kw*ic.
std::int64_t paper_im2col_elements(const ConvProblem& problem);
std::int64_t paper_mec_elements(const ConvProblem& problem);
void print_mec_memory(std::ostream& out, const std::vector<ConvLayer>& layers);

}  // namespace tunecnn
