// The core of the TunedPlanner: the --tune policy (off, cached, verify, full; tuned_planner.h
// says what each does) and the resolution of each direction key by it, from this device's cache
// entry, a profile, a re-timing of another device's entry, or nothing (`off`: the defaults).
// Each key is resolved at most once per planner; what was measured goes to storage
// (tuned_planner_storage.cpp).
#include <cmath>
#include <iostream>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "autotune/tuned_planner.h"
#include "autotune/tuned_planner_internal.h"
#include "core/error.h"

namespace tunecnn {
using tuned_planner_internal::directions;
using tuned_planner_internal::pool_directions;
using tuned_planner_internal::section_device;
using tuned_planner_internal::steady_seconds;

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

std::string TunedPlanner::cache_label() const {
  return cache_path_.empty() ? "(in memory)" : cache_path_.string();
}

void TunedPlanner::warn(const std::string& message) const {
  if (options_.warn)
    options_.warn(message);
  else
    std::cerr << "warning: " << message << "\n";
}

// ---- resolving one direction ------------------------------------------------------------------

// Another device's entry for this key: the one whose fingerprint shares the most fields with
// ours (the same CPU model and ISA first), then the most timed runs. Only devices of our kind: the
// keys do not name the device, and a GPU's shortlist re-timed on a CPU (or the reverse) would
// stand in for a full search and leave out the solvers that only this kind has (cudnn; winograd,
// direct_chwn).
const TuningEntry* TunedPlanner::foreign_entry(const std::string& key) const {
  const TuningEntry* best = nullptr;
  int best_shared = -1;
  for (const auto& [id, device] : cache_.devices()) {
    if (id == device_id_ || section_device(id) != section_device(device_id_)) continue;
    auto it = device.entries.find(key);
    if (it == device.entries.end()) continue;
    int shared = 0;
    for (const auto& [field, value] : device.fingerprint) {
      auto mine = device_fields_.find(field);
      shared += mine != device_fields_.end() && mine->second == value;
    }
    if (shared > best_shared) best = &it->second, best_shared = shared;
  }
  return best;
}

const TuningEntry& TunedPlanner::remember(TuningEntry entry) {
  const std::string key = entry.key;
  return resolved_[key] = std::move(entry);
}

bool TunedPlanner::would_profile(const Subject& subject) const {
  if (policy_ == TunePolicy::off) return false;
  if (resolved_.count(subject.key)) return false;
  if (policy_ == TunePolicy::full) return true;
  const TuningEntry* entry = cache_.find(device_id_, subject.key);
  return entry == nullptr || !usable(*entry, subject);
}

const TuningEntry* TunedPlanner::resolve(const Subject& subject) {
  const std::string& key = subject.key;
  if (auto it = resolved_.find(key); it != resolved_.end()) return &it->second;
  if (missing_.count(key)) return nullptr;
  ++stats_.keys;
  if (policy_ != TunePolicy::full) {
    if (const TuningEntry* entry = cache_.find(device_id_, key)) {
      warn_unoffered_configs(*entry, subject);
      if (usable(*entry, subject)) {
        ++stats_.from_cache;
        // An entry the system layer gave dates nothing: the user's file has no section for it.
        const TuningEntry* system_entry = system_.find(device_id_, key);
        const bool from_system = system_entry != nullptr && *system_entry == *entry;
        stats_.from_system += from_system;
        if (!from_system) note_use();
        return &remember(*entry);
      }
      warn("tuning cache " + cache_label() + ": no candidate of the entry for " + key +
           " runs here any more (solver gone, not applicable, or over --max-workspace)" +
           (policy_ == TunePolicy::off ? "; deciding it from the thresholds" : "; re-tuning it"));
    }
  }
  if (policy_ == TunePolicy::off || budget_spent()) {
    ++stats_.defaults;
    stats_.over_budget += policy_ != TunePolicy::off;
    missing_[key] = true;
    return nullptr;
  }
  return measure(subject);
}

// Profiles the key, or under `verify` re-times the shortlist of another device's entry for it
// when there is one; stores and remembers what it measured.
const TuningEntry* TunedPlanner::measure(const Subject& subject) {
  const std::string& key = subject.key;
  if (on_profile) on_profile(key);
  const double start = steady_seconds();
  if (has_budget()) search_started_ = budget_clock_();
  TuningEntry entry;
  const TuningEntry* foreign = policy_ == TunePolicy::verify ? foreign_entry(key) : nullptr;
  if (foreign != nullptr) {
    const std::vector<CandidateResult> shortlist = best_per_layout(foreign->candidates);
    entry = subject.retime(shortlist);
    ++stats_.verified;
    stats_.retimed_candidates += static_cast<int>(entry.candidates.size());
  } else {
    entry = subject.tune();
    ++stats_.profiled;
  }
  stats_.profile_seconds += steady_seconds() - start;
  if (has_budget()) budget_spent_ += budget_clock_() - *search_started_;
  search_started_.reset();
  if (entry.partial)
    partial_entries_.push_back(entry), ++stats_.partial;  // a later run searches it in full
  else
    store(entry, subject.forcible);
  return &remember(std::move(entry));
}

// ---- the tuning budget -----------------------------------------------------------------------

void TunedPlanner::set_budget(double seconds, std::function<double()> clock) {
  TUNECNN_CHECK(seconds > 0 && std::isfinite(seconds), "the tuning budget must be a positive number of seconds, got ", seconds);
  budget_seconds_ = seconds;
  budget_clock_ = clock ? std::move(clock) : std::function<double()>(steady_seconds);
  options_.out_of_time = [this] { return budget_spent(); };
}

bool TunedPlanner::budget_spent() const {
  if (!has_budget()) return false;
  const double running = search_started_ ? budget_clock_() - *search_started_ : 0;
  return budget_spent_ + running >= budget_seconds_;
}

TuningCache TunedPlanner::partial_cache() const {
  std::lock_guard lock(mutex_);
  TuningCache cache;
  for (const TuningEntry& entry : partial_entries_) cache.put(device_id_, device_fields_, entry);
  return cache;
}

int TunedPlanner::pending(const std::vector<std::pair<ConvProblem, LayerUse>>& conv_layers,
                          const std::vector<std::pair<PoolProblem, LayerUse>>& pool_layers,
                          const std::vector<SoftmaxProblem>& softmax_problems) const {
  std::lock_guard lock(mutex_);
  std::set<std::string> keys;
  const auto count = [&](const Subject& subject) {
    if (would_profile(subject)) keys.insert(subject.key);
  };
  for (const auto& [fwd, use] : conv_layers)
    for (Direction dir : directions(use)) count(conv_subject(fwd.with_dir(dir)));
  for (const auto& [fwd, use] : pool_layers)
    for (Direction dir : pool_directions(use)) count(pool_subject(fwd.with_dir(dir)));
  for (const SoftmaxProblem& problem : softmax_problems) count(softmax_subject(problem));
  return static_cast<int>(keys.size());
}

// ---- resolving a layer's directions ----------------------------------------------------------

std::optional<LayerEntries> TunedPlanner::layer_entries(const ConvProblem& fwd_problem,
                                                        LayerUse use) {
  std::lock_guard lock(mutex_);
  LayerEntries entries;
  bool complete = true;
  for (Direction dir : directions(use)) {  // every direction, so `off` counts each missing key
    const TuningEntry* entry = resolve(conv_subject(fwd_problem.with_dir(dir)));
    if (entry != nullptr) entries[static_cast<int>(dir)] = *entry;
    complete = complete && entry != nullptr;
  }
  if (!complete) return std::nullopt;
  return entries;
}

std::optional<PoolEntries> TunedPlanner::pool_entries(const PoolProblem& fwd_problem, LayerUse use) {
  std::lock_guard lock(mutex_);
  PoolEntries entries;
  bool complete = true;
  for (Direction dir : pool_directions(use)) {
    const TuningEntry* entry = resolve(pool_subject(fwd_problem.with_dir(dir)));
    if (entry != nullptr) entries[static_cast<int>(dir)] = *entry;
    complete = complete && entry != nullptr;
  }
  if (!complete) return std::nullopt;
  return entries;
}

}  // namespace tunecnn
