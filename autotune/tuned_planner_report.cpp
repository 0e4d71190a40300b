// What a TunedPlanner did, for the user: its counts (stats()) and the one-line summary() that
// `train` and `autotune profile` print after planning.
#include <cstdio>
#include <mutex>
#include <string>

#include "autotune/tuned_planner.h"

namespace tunecnn {

TunedPlannerStats TunedPlanner::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

namespace {
std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", seconds);
  return text;
}
}  // namespace

std::string TunedPlanner::summary() const {
  const TunedPlannerStats s = stats();
  const std::string seconds = seconds_text(s.profile_seconds);
  std::string out = "tuning (" + std::string(to_string(policy_)) + "): " + std::to_string(s.keys) +
                    " problems, " + std::to_string(s.from_cache) + " from cache";
  if (s.from_system > 0)
    out += " (" + std::to_string(s.from_system) + " from the system cache " + system_path_.string() +
           ")";
  out += ", " + std::to_string(s.profiled) + " profiled";
  if (s.verified > 0)
    out += ", " + std::to_string(s.verified) + " verified (" + std::to_string(s.retimed_candidates) +
           " candidates re-timed)";
  out += " in " + std::string(seconds) + " s";
  if (s.defaults > 0) {
    const bool calibrated = [&] {
      std::lock_guard lock(mutex_);
      const DeviceThresholds t = cache_.thresholds(device_id_);
      return t.ct || t.nt || t.mec_t;
    }();
    out += ", " + std::to_string(s.defaults) +
           (calibrated ? " decided by the device thresholds" : " untuned defaults (no calibration)");
  }
  if (s.over_budget > 0 || s.partial > 0)
    out += "; the --tune-budget of " + seconds_text(budget_seconds_) + " s left " + std::to_string(s.over_budget) +
           " untimed and cut " + std::to_string(s.partial) + " short (a later run tunes them)";
  return out + (cache_path_.empty() ? " (in memory)" : " (cache " + cache_path_.string() + ")");
}

}  // namespace tunecnn
