#pragma once
// A model's training step split by layer type under several plans (apps/bench/layer_split.h):
// the autotuner's plan, and the same plan with one depthwise solver forced on every depthwise
// layer, all from one tuning cache, timed in interleaved rounds.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "autotune/candidate_search.h"

namespace tunecnn {

struct ModelSplitOptions {
  std::string model = "mobilenet-1.0-128";
  int batch = 16;
  int rounds = 3, steps = 3;           // per variant per round, after one warm-up step
  std::filesystem::path tune_cache;    // empty: a fresh temporary file, removed afterwards
  std::vector<std::string> forced;     // depthwise solvers to force, one variant each
};

struct SplitVariant {
  std::string name;                                // "tuned" or the forced solver
  std::vector<double> step_s;                      // each timed step
  std::vector<std::pair<std::string, double>> kind_s;  // per layer kind, mean seconds per step
  double loss_s = 0, update_s = 0;                 // mean per step
  std::string depthwise_plans;                     // "dw1 depthwise_direct/NHWC, ..."
};

// Tunes (or reuses the cache), then times every variant; prints progress lines to `log`.
std::vector<SplitVariant> split_model_step(const ModelSplitOptions& options, std::ostream& log);

}  // namespace tunecnn
