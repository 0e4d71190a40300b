#include "apps/bench/max_batch.h"

#include <algorithm>

#include "core/error.h"

namespace tunecnn {

MaxBatch largest_batch_within(std::size_t budget, int limit, const MeasurePeak& measure,
                              const std::function<void(const BatchTrial&)>& on_trial) {
  TUNECNN_CHECK(limit >= 1, "the largest batch to try must be at least 1, got ", limit);
  MaxBatch result;
  // Measures one batch; nullopt when it could not be measured (the search stops there).
  const auto fits = [&](int batch) -> std::optional<bool> {
    BatchTrial trial{batch, measure(batch), false};
    trial.fits = trial.bytes && *trial.bytes <= budget;
    result.trials.push_back(trial);
    if (on_trial) on_trial(trial);
    if (!trial.bytes) {
      result.stopped = "no measurement at batch " + std::to_string(batch);
      return std::nullopt;
    }
    return trial.fits;
  };
  int largest_fitting = 0, smallest_failing = 0;
  for (int batch = 1;; batch = std::min(2 * batch, limit)) {
    const std::optional<bool> ok = fits(batch);
    if (!ok) break;
    if (!*ok) {
      smallest_failing = batch;
      break;
    }
    largest_fitting = batch;
    if (batch == limit) {
      result.at_limit = true;
      break;
    }
  }
  while (result.stopped.empty() && smallest_failing - largest_fitting > 1) {
    const int middle = largest_fitting + (smallest_failing - largest_fitting) / 2;
    const std::optional<bool> ok = fits(middle);
    if (!ok) break;
    (*ok ? largest_fitting : smallest_failing) = middle;
  }
  result.batch = largest_fitting;
  return result;
}

}  // namespace tunecnn
