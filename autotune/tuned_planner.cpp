#include "autotune/tuned_planner.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <utility>

#include "core/error.h"
#include "ops/conv/registry.h"

namespace tunecnn {
namespace {

double steady_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

bool has_layout(const std::vector<Layout>& layouts, Layout layout) {
  for (Layout l : layouts)
    if (l == layout) return true;
  return false;
}

}  // namespace

TunePolicy parse_tune_policy(std::string_view text) {
  if (text == "off") return TunePolicy::off;
  if (text == "cached") return TunePolicy::cached;
  if (text == "full") return TunePolicy::full;
  if (text == "verify") return TunePolicy::verify;
  TUNECNN_FAIL("unknown tuning policy '", text, "': expected off, cached, full or verify");
}

std::string_view to_string(TunePolicy policy) {
  switch (policy) {
    case TunePolicy::off: return "off";
    case TunePolicy::cached: return "cached";
    case TunePolicy::full: return "full";
    case TunePolicy::verify: return "verify";
  }
  return "?";
}

TunedConvPlanner::TunedConvPlanner(TunePolicy policy, std::filesystem::path cache_path,
                                   ConvTunerOptions options, std::string device_id,
                                   std::map<std::string, std::string> device_fields)
    : policy_(policy),
      cache_path_(std::move(cache_path)),
      options_(std::move(options)),
      device_id_(std::move(device_id)),
      device_fields_(std::move(device_fields)) {
  TUNECNN_CHECK(policy_ != TunePolicy::verify,
                "--tune verify is not implemented yet; use off, cached or full");
  TUNECNN_CHECK(options_.layouts == std::vector<Layout>{Layout::NCHW},
                "conv layers run in NCHW only, so the tuner's layouts must be {NCHW}");
  TUNECNN_CHECK(!device_id_.empty(), "TunedConvPlanner: empty device id");
  LoadedTuningCache loaded = load_tuning_cache(cache_path_);
  for (const std::string& w : loaded.warnings) warn(w);
  cache_ = std::move(loaded.cache);
}

void TunedConvPlanner::warn(const std::string& message) const {
  if (options_.warn)
    options_.warn(message);
  else
    std::cerr << "warning: " << message << "\n";
}

ConvLayerPlan TunedConvPlanner::plan(const ConvProblem& fwd_problem) {
  std::lock_guard lock(mutex_);
  ConvLayerPlan out;
  out.fwd = resolve(fwd_problem.with_dir(Direction::fwd));
  out.bwd_data = resolve(fwd_problem.with_dir(Direction::bwd_data));
  out.bwd_weights = resolve(fwd_problem.with_dir(Direction::bwd_weights));
  return out;
}

bool TunedConvPlanner::usable(const TuningEntry& entry, const ConvProblem& problem, ConvPlan& plan,
                              std::string& why) const {
  const ConvSolver* solver = nullptr;
  for (const ConvSolver* s : options_.solvers)
    if (s->name() == entry.solver) solver = s;
  if (solver == nullptr) solver = find_conv_solver(entry.solver);
  if (solver == nullptr) {
    why = "names solver '" + entry.solver + "', which this build does not have";
    return false;
  }
  if (!has_layout(options_.layouts, entry.layout)) {
    why = "runs in " + std::string(to_string(entry.layout)) + ", which conv layers cannot use";
    return false;
  }
  std::string reason;
  if (!solver->applicable(problem, &reason)) {
    why = "solver " + entry.solver + " no longer applies (" + reason + ")";
    return false;
  }
  if (solver->workspace_bytes(problem, entry.config) > options_.max_workspace_bytes) {
    why = "solver " + entry.solver + " needs more workspace than --max-workspace allows";
    return false;
  }
  plan = {solver, entry.config};
  return true;
}

ConvPlan TunedConvPlanner::resolve(const ConvProblem& problem) {
  const std::string key = problem.key();
  if (auto it = resolved_.find(key); it != resolved_.end()) return it->second;
  ++stats_.keys;
  ConvPlan plan;
  if (policy_ != TunePolicy::full) {
    if (const TuningEntry* entry = cache_.find(device_id_, key)) {
      std::string why;
      if (usable(*entry, problem, plan, why)) {
        ++stats_.from_cache;
        return resolved_[key] = plan;
      }
      warn("tuning cache " + cache_path_.string() + ": the entry for " + key + " " + why +
           (policy_ == TunePolicy::off ? "; using the untuned default" : "; re-tuning it"));
    }
  }
  if (policy_ == TunePolicy::off) {
    ++stats_.defaults;
    plan = FirstApplicablePlanner(Layout::NCHW).plan(problem.with_dir(Direction::fwd))
               .for_direction(problem.dir);
    return resolved_[key] = plan;
  }
  plan = profile(problem);
  return resolved_[key] = plan;
}

ConvPlan TunedConvPlanner::profile(const ConvProblem& problem) {
  const double start = steady_seconds();
  TuningEntry entry = tune_conv(problem, options_);
  stats_.profile_seconds += steady_seconds() - start;
  ++stats_.profiled;
  ConvPlan plan;
  std::string why;
  // A fresh entry always names a runnable solver; resolve it the same way as a cached one.
  if (!usable(entry, problem, plan, why)) plan = plan_from_entry(entry);
  store(entry);
  return plan;
}

void TunedConvPlanner::store(const TuningEntry& entry) {
  if (!save_failed_) {
    try {
      LoadedTuningCache written = update_tuning_cache_file(cache_path_, [&](TuningCache& fresh) {
        fresh.put(device_id_, device_fields_, entry);
      });
      for (const std::string& w : written.warnings) warn(w);
      cache_ = std::move(written.cache);
      return;
    } catch (const std::exception& e) {
      // A cache we cannot write must not stop training: keep the decisions in memory.
      save_failed_ = true;
      warn("cannot write the tuning cache " + cache_path_.string() + ": " + user_message(e) +
           "; tuned plans are kept for this run only");
    }
  }
  cache_.put(device_id_, device_fields_, entry);
}

TunedPlannerStats TunedConvPlanner::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

std::string TunedConvPlanner::summary() const {
  const TunedPlannerStats s = stats();
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.1f", s.profile_seconds);
  std::string out = "tuning (" + std::string(to_string(policy_)) + "): " + std::to_string(s.keys) +
                    " conv problems, " + std::to_string(s.from_cache) + " from cache, " +
                    std::to_string(s.profiled) + " profiled in " + seconds + " s";
  if (s.defaults > 0) out += ", " + std::to_string(s.defaults) + " untuned defaults";
  return out + " (cache " + cache_path_.string() + ")";
}

}  // namespace tunecnn
