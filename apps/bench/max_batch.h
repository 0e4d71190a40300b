#pragma once
// The largest batch whose training step fits a memory budget (bench memory --max-batch): a
// step's memory grows with its batch, so the batches that fit are 1..B, found by doubling from 1
// until one does not fit, then bisecting between the last that did and the first that did not:
// about 2 log2(B) measured steps.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tunecnn {

struct BatchTrial {
  int batch = 0;
  std::optional<std::size_t> bytes;  // the step's measured peak; nullopt: not measured
  bool fits = false;
};

struct MaxBatch {
  int batch = 0;           // the largest batch that fits; 0 when batch 1 does not
  bool at_limit = false;   // the search's limit fits: the true largest may be higher
  std::vector<BatchTrial> trials;  // in the order measured
  std::string stopped;     // why the search stopped before its answer, or empty
};

using MeasurePeak = std::function<std::optional<std::size_t>(int batch)>;

// Searches batches 1..limit (limit >= 1); `on_trial` hears each measurement as it is made.
MaxBatch largest_batch_within(std::size_t budget, int limit, const MeasurePeak& measure,
                              const std::function<void(const BatchTrial&)>& on_trial = {});

}  // namespace tunecnn
