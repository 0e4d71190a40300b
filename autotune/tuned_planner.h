#pragma once
// The planner `train` installs: each conv problem key gets its plan from the tuning cache or from
// the tuner, according to the --tune policy, and every decision it profiles is added to the YAML
// cache (atomically, under the file lock, keeping what other processes wrote).
//
//   off     times nothing: a cached entry for this device when there is one, otherwise the
//           untuned default (FirstApplicablePlanner's choice). Once device calibration exists,
//           the device thresholds (MEC's T, Li et al.'s Ct/Nt) will drive `off` instead.
//   cached  a cached entry for this device when there is one and its solver still applies;
//           otherwise profile (tune_conv) and store the result.
//   full    profile every key and store the result, whatever the cache holds.
//   verify  parsed, but not implemented yet: the constructor rejects it.
//
// Each key is resolved at most once per planner (keys are deduped across layers and calls).
// Only NCHW solvers run inside Conv2d today, so the tuner's layouts must stay {NCHW}.
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "autotune/conv_tuner.h"
#include "autotune/tuning_cache.h"
#include "ops/conv/plan.h"

namespace tunecnn {

enum class TunePolicy { off, cached, full, verify };

// "off", "cached", "full" or "verify"; throws Error naming the accepted values otherwise.
TunePolicy parse_tune_policy(std::string_view text);
std::string_view to_string(TunePolicy policy);

struct TunedPlannerStats {
  int keys = 0;            // distinct direction problems planned
  int from_cache = 0;      // used a cached entry
  int profiled = 0;        // tuned in this process
  int defaults = 0;        // `off` with no usable entry: the untuned default
  double profile_seconds = 0;  // wall time inside the tuner (steady clock, never options.clock)
};

class TunedConvPlanner final : public ConvPlanner {
 public:
  // Loads the cache at `cache_path` (a missing file is an empty cache; an unusable one is moved
  // aside and reported through options.warn). Throws Error for TunePolicy::verify, or when
  // options.layouts is not {NCHW}.
  TunedConvPlanner(TunePolicy policy, std::filesystem::path cache_path, ConvTunerOptions options,
                   std::string device_id, std::map<std::string, std::string> device_fields);

  ConvLayerPlan plan(const ConvProblem& fwd_problem) override;

  TunedPlannerStats stats() const;
  // "tuning (cached): 6 conv problems, 4 from cache, 2 profiled in 1.3 s (cache FILE)".
  std::string summary() const;
  const std::filesystem::path& cache_path() const { return cache_path_; }

 private:
  ConvPlan resolve(const ConvProblem& problem);  // one direction; mutex held
  bool usable(const TuningEntry& entry, const ConvProblem& problem, ConvPlan& plan,
              std::string& why) const;
  ConvPlan profile(const ConvProblem& problem);
  void store(const TuningEntry& entry);
  void warn(const std::string& message) const;

  TunePolicy policy_;
  std::filesystem::path cache_path_;
  ConvTunerOptions options_;
  std::string device_id_;
  std::map<std::string, std::string> device_fields_;
  TuningCache cache_;                       // the file as last read or written
  std::map<std::string, ConvPlan> resolved_;  // by direction problem key
  TunedPlannerStats stats_;
  bool save_failed_ = false;
  mutable std::mutex mutex_;
};

}  // namespace tunecnn
