#pragma once
// One measured row of `bench conv` (layer x solver x config x direction), the fastest mark per
// layer x direction, and the CSV the rows are written to.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "apps/bench/step_timer.h"
#include "ops/conv/problem.h"

namespace tunecnn {

struct ConvBenchRow {
  std::string layer, solver, config;
  Layout layout = Layout::NCHW;
  Direction dir = Direction::fwd;
  int batch = 1;
  std::int64_t macs = 0;
  TimingStats timing;
  std::size_t workspace_bytes = 0;   // what the solver asks for
  std::size_t peak_bytes = 0;        // our allocator's peak over the call's own tensors
  std::optional<double> pytorch_ms;  // the same layer and direction in PyTorch
  std::optional<std::size_t> pytorch_peak_bytes;  // one PyTorch forward; fwd rows only
  bool fastest = false;

  double median_ms() const { return 1e3 * timing.median_s; }
  double gflops() const;                // 2 * macs / median time
  std::optional<double> ratio() const;  // pytorch_ms / median_ms: > 1 means we are faster
};

// Sets `fastest` on the row with the lowest median of each layer x direction, clears the others.
void mark_fastest(std::vector<ConvBenchRow>& rows);
// The fastest row of one layer and direction, or nullptr when none was measured.
const ConvBenchRow* fastest_row(const std::vector<ConvBenchRow>& rows, const std::string& layer,
                                Direction dir);

// The lowest-median row of one solver (over its configs) for one layer and direction, or nullptr
// when that solver was not timed there.
const ConvBenchRow* fastest_row_of(const std::vector<ConvBenchRow>& rows, const std::string& layer,
                                   Direction dir, const std::string& solver);

// The lowest-median row of one layer and direction among the rows `pick` accepts, or nullptr.
const ConvBenchRow* fastest_row_if(const std::vector<ConvBenchRow>& rows, const std::string& layer,
                                   Direction dir, const std::function<bool(const ConvBenchRow&)>& pick);

// The header and one line per row; fields with commas or quotes are quoted.
std::string conv_bench_csv(const std::vector<ConvBenchRow>& rows);
std::string csv_field(const std::string& text);

}  // namespace tunecnn
