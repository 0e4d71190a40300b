#pragma once
// The planner `train` and `autotune profile` hand to their model (Planners::all, ops/planners.h):
// each conv, pooling and softmax problem key gets its tuning entry from the cache or the tuner,
// according to the --tune policy, and every entry it measures is added to the YAML cache
// (atomically, under the file lock, keeping what other processes wrote).
//
//   off     times nothing: this device's cached entries when there are some; otherwise the
//           device thresholds (calibration.h) decide (threshold_plan), or, on an uncalibrated
//           device, the untuned default (FirstApplicablePlanner's NCHW choice); pooling takes
//           each solver's default config in the layout its input arrives in.
//   cached  this device's entry when it is there and still runs here; otherwise profile
//           (tune_conv, tune_pool) and store the result.
//   verify  like cached, but a key this device lacks and another device has is a starting
//           point: only the best candidate of each layout there (at most 3) is checked and
//           re-timed here (retime_candidates), then stored under this device.
//   full    profile every key and store the result, whatever the cache holds.
//
// The cache may have two layers (tuning_cache_layers.h): the user's file over a read-only system
// cache. Every lookup above (this device's entry, another device's for verify, the thresholds)
// reads the layered view, the user's layer first; everything measured is written to the user's
// file only.
//
// An entry keeps every candidate in every layout; a layer's plan takes, for the layout the layer
// runs in, each direction's best candidate in that layout. The layout comes from the network
// planner's DP (network_planner.h), or, for a layer planned alone (plan()), from the layer's own
// costs plus the transforms from and back to NCHW (a pooling layer alone: the layout its input
// arrives in). Each key is resolved at most once per planner.
//
// The class is defined by concern: tuned_planner.cpp (the policy and the resolution of a key),
// tuned_planner_candidates.cpp (each op family as the policy sees it; which candidates are
// eligible), tuned_planner_storage.cpp (the cache file), tuned_planner_costs.cpp (what the layout
// DP reads), tuned_planner_plans.cpp (from entries to plans) and tuned_planner_report.cpp.
#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "autotune/conv_tuner.h"
#include "autotune/layout_plan.h"
#include "autotune/pool_tuner.h"
#include "autotune/softmax_tuner.h"
#include "autotune/tuning_cache.h"
#include "ops/conv/plan.h"
#include "ops/pool/plan.h"
#include "ops/softmax/plan.h"

namespace tunecnn {

enum class TunePolicy { off, cached, full, verify };

// "off", "cached", "full" or "verify"; throws Error naming the accepted values otherwise.
TunePolicy parse_tune_policy(std::string_view text);
std::string_view to_string(TunePolicy policy);

struct TunedPlannerStats {
  int keys = 0;            // distinct direction problems planned
  int from_cache = 0;      // used this device's cached entry (either layer)
  int from_system = 0;     // of those, taken from the system layer (the user's file lacks them)
  int profiled = 0;        // tuned in full in this process
  int verified = 0;        // carried over from another device and re-timed (verify)
  int retimed_candidates = 0;  // candidates re-timed by verify, over all verified keys
  int defaults = 0;        // `off` with no usable entry, or over the budget: thresholds or the untuned default
  int over_budget = 0;     // of those, left untimed because the tuning budget was spent
  int partial = 0;         // searches the budget cut short: used in this run, not stored
  double profile_seconds = 0;  // wall time inside the tuner (steady clock, never options.clock)
};

// The three directions' entries of one layer, fwd, bwd_data, bwd_weights. For a shape only ever
// run forward (evaluation batches) the backward entries are left empty (no key).
using LayerEntries = std::array<TuningEntry, 3>;

// A pooling layer's entries, fwd and bwd_data; bwd_data is left empty (no key) for inference.
using PoolEntries = std::array<TuningEntry, 2>;

// Whether a shape is trained on (every direction matters) or only evaluated (forward only). A
// layer trained on whose input is the data (no layer before it has parameters) never computes its
// input's gradient: training_from_data tunes and costs its forward and weight-gradient directions
// only (a pooling layer there, its forward only).
enum class LayerUse { training, training_from_data, inference };

class TunedPlanner final : public ConvPlanner, public PoolPlanner, public SoftmaxPlanner {
 public:
  // ---- the cache file (tuned_planner_storage.cpp) ----------------------------------------------

  // Loads the cache at `cache_path` (a missing file is an empty cache; an unusable one is moved
  // aside and reported through options.warn) over the read-only system cache at
  // `system_cache_path` (empty: none; missing: none, silently; unusable: none, with a warning).
  TunedPlanner(TunePolicy policy, std::filesystem::path cache_path, TunerOptions options,
               std::string device_id, std::map<std::string, std::string> device_fields,
               std::filesystem::path system_cache_path = {});
  // A planner over `cache` alone, with no file behind it: what it measures stays in this process.
  // The ranks of a data-parallel job plan this way from the entries rank 0 tuned, so every rank
  // runs rank 0's plan.
  TunedPlanner(TunePolicy policy, TuningCache cache, TunerOptions options, std::string device_id,
               std::map<std::string, std::string> device_fields);
  // Writes what is still unsaved (flush()); a failure here is only reported.
  ~TunedPlanner() override;

  // Writes the entries measured since the last write to the cache file, in one update under the
  // lock. While a pass profiles, entries are written at most about once a second (each write
  // re-reads and rewrites the whole file), so a pass ends with flush(): the plan() methods (a
  // layer alone) and NetworkPlanner::plan call it, and so does the destructor.
  void flush();

  // ---- the planners the layers ask, one layer alone (tuned_planner_plans.cpp) -------------------

  // A layer planned on its own: its input arrives, and its output leaves, in NCHW.
  ConvLayerPlan plan(const ConvProblem& fwd_problem) override;
  // A pooling layer planned alone runs in the layout its input arrives in.
  PoolLayerPlan plan(const PoolProblem& fwd_problem, Layout layout) override;
  // Softmax cross-entropy: the entry's choice (profiled per the policy); under `off` without an
  // entry, the first applicable solver.
  const SoftmaxSolver& plan(const SoftmaxProblem& problem) override;

  // ---- the tuning budget (tuned_planner.cpp) ----------------------------------------------------

  // --tune-budget: at most `seconds` of `clock` (empty: the steady clock) in the tuner over the
  // planner's life. A search running when it is spent stops after its current candidate (its
  // entry is used but not stored); later keys get the `off` plan (thresholds or the untuned
  // default) and are left for a later run. Call before planning.
  void set_budget(double seconds, std::function<double()> clock = {});
  // The conv workspace limit (TunerOptions::max_workspace_bytes) from now on: plans made after
  // it take each direction's best candidate within it (train --memory-budget lowers it).
  void set_max_workspace(std::size_t bytes) { options_.max_workspace_bytes = bytes; }
  bool has_budget() const { return budget_seconds_ > 0; }

  // ---- resolving a layer's keys by the policy (tuned_planner.cpp) -------------------------------

  // The entries behind a layer, resolved per the policy; nullopt under `off` when this device has
  // no usable entry for one of the directions that `use` needs.
  std::optional<LayerEntries> layer_entries(const ConvProblem& fwd_problem,
                                            LayerUse use = LayerUse::training);
  // Pooling, the same way over its two directions.
  std::optional<PoolEntries> pool_entries(const PoolProblem& fwd_problem,
                                          LayerUse use = LayerUse::training);

  // How many of these problems' direction keys the policy would profile or re-time now.
  int pending(const std::vector<std::pair<ConvProblem, LayerUse>>& conv_layers,
              const std::vector<std::pair<PoolProblem, LayerUse>>& pool_layers,
              const std::vector<SoftmaxProblem>& softmax_problems) const;
  // Called before each key is profiled or re-timed, with the key.
  std::function<void(const std::string&)> on_profile;

  // ---- what the layout DP reads (tuned_planner_costs.cpp) ---------------------------------------

  // The layer as the layout DP sees it: milliseconds per step in each layout (kCannotRun where
  // some direction has no usable measured candidate in it) over the directions the entries hold,
  // and the spreads of those timings as its noise.
  LayoutNode layout_node(const ConvProblem& fwd_problem, const LayerEntries& entries) const;
  LayoutNode pool_layout_node(const PoolProblem& fwd_problem, const PoolEntries& entries) const;
  // Forward plus backward transform of an activation of this shape, in milliseconds, from this
  // device's measured bandwidths (measured now and stored when missing, except under `off`).
  double transform_cost(const Shape& shape, Layout from, Layout to);

  // ---- the plans for the layout the DP chose (tuned_planner_plans.cpp) --------------------------

  // Each direction's best usable candidate in `layout`; nullopt when some direction has none.
  // Directions without an entry (inference) get the first applicable solver in that layout.
  std::optional<ConvLayerPlan> plan_in_layout(const ConvProblem& fwd_problem,
                                              const LayerEntries& entries, Layout layout) const;
  std::optional<PoolLayerPlan> pool_plan_in_layout(const PoolProblem& fwd_problem,
                                                   const PoolEntries& entries, Layout layout) const;
  // The `off` plan: thresholds, or the untuned default on an uncalibrated device.
  ConvLayerPlan untimed_plan(const ConvProblem& fwd_problem);

  // ---- what it did (tuned_planner_report.cpp), and what it plans with ---------------------------

  TunePolicy policy() const { return policy_; }
  TunedPlannerStats stats() const;
  // "tuning (cached): 6 problems, 4 from cache, 2 profiled in 1.27 s (cache FILE)"; with a system
  // layer, "4 from cache (3 from the system cache FILE)".
  std::string summary() const;
  const std::filesystem::path& cache_path() const { return cache_path_; }  // empty: in memory
  // The layered view: the user's file over the system layer.
  const TuningCache& cache() const { return cache_; }
  // The entries the budget cut short, which plans use but cache() never holds: the other ranks of
  // a data-parallel job need them to plan as this one does.
  TuningCache partial_cache() const;
  const std::string& device_id() const { return device_id_; }
  const TunerOptions& options() const { return options_; }

 private:
  // ---- each op family as the policy sees it (tuned_planner_candidates.cpp) ---------------------

  // One direction problem of any kind, as the policy sees it.
  struct Subject {
    std::string key;
    bool forcible = false;  // --force-solver names conv solvers only
    std::function<bool(const CandidateResult&)> runnable;  // its solver, layout and budget fit here
    // Its config is one its solver offers for the problem: a cache entry edited by hand, or
    // written by another version, may hold values the solver never runs with.
    std::function<bool(const CandidateResult&)> offered;
    std::function<bool(const std::string&)> applies;       // the named solver takes the problem
    std::function<TuningEntry()> tune;
    std::function<TuningEntry(const std::vector<CandidateResult>&)> retime;
  };
  Subject conv_subject(const ConvProblem& problem) const;
  Subject pool_subject(const PoolProblem& problem) const;
  Subject softmax_subject(const SoftmaxProblem& problem) const;

  const ConvSolver* solver_named(const std::string& name, Device device) const;
  bool forced(const std::string& solver) const;
  bool eligible(const TuningEntry& entry, const CandidateResult& c, const Subject& subject) const;
  bool usable(const TuningEntry& entry, const Subject& subject) const;
  void warn_unoffered_configs(const TuningEntry& entry, const Subject& subject) const;
  const CandidateResult* best_in_layout(const TuningEntry& entry, const Subject& subject,
                                        Layout layout) const;

  // ---- resolving one key (tuned_planner.cpp) ----------------------------------------------------

  const TuningEntry* resolve(const Subject& subject);  // mutex held
  const TuningEntry* measure(const Subject& subject);  // resolve()'s profiling; mutex held
  const TuningEntry* foreign_entry(const std::string& key) const;
  bool would_profile(const Subject& subject) const;
  const TuningEntry& remember(TuningEntry entry);
  void warn(const std::string& message) const;
  // The cache file's path for messages, or "(in memory)".
  std::string cache_label() const;

  // ---- writing to the cache (tuned_planner_storage.cpp) -----------------------------------------

  void store(const TuningEntry& entry, bool forcible);  // forcible: --force-solver applies
  void store_transform_bandwidths(const std::map<std::string, double>& gbps);
  // A cached entry of this device was used: flush() dates its section today, once a day at most.
  void note_use();
  // cache_ becomes `user` (the user's file as just read or written) over the system layer.
  void adopt_user_cache(TuningCache user);

  TunePolicy policy_;
  std::filesystem::path cache_path_;
  TunerOptions options_;
  std::string device_id_;
  std::map<std::string, std::string> device_fields_;
  std::filesystem::path system_path_;           // empty: no system layer
  TuningCache system_;                          // the system layer, read once, never written
  TuningCache cache_;  // the user's file as last read or written, over system_
  std::map<std::string, TuningEntry> resolved_;  // by direction problem key
  std::map<std::string, bool> missing_;          // keys left untimed (`off`, or over the budget)
  std::map<std::string, const SoftmaxSolver*> softmax_plans_;  // by key, once resolved
  TunedPlannerStats stats_;
  double budget_seconds_ = 0;             // 0: no budget
  std::function<double()> budget_clock_;  // seconds
  double budget_spent_ = 0;               // in searches that ended
  std::optional<double> search_started_;  // budget_clock_ when the running search began
  std::vector<TuningEntry> partial_entries_;  // cut short by the budget: used, never stored
  bool budget_spent() const;              // the current search's time included
  std::vector<TuningEntry> unsaved_;  // in cache_ but not yet in the file
  double last_save_s_ = 0;            // steady clock, at construction or the last write
  bool save_failed_ = false;
  std::string today_;                 // UTC "YYYY-MM-DD" at construction
  bool use_undated_ = false;          // used today, and the file's last_used for us is older
  mutable std::recursive_mutex mutex_;
};

}  // namespace tunecnn
