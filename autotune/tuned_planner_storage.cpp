// The TunedPlanner's way to the tuning cache on disk: loading the file (or taking a cache in
// memory) over the read-only system layer, adding the entries it measures, and writing them back
// to the user's file in one locked update per pass (update_tuning_cache_file keeps what other
// processes wrote meanwhile). The system file is read once here and never written.
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <system_error>
#include <utility>

#include "autotune/tuned_planner.h"
#include "autotune/tuned_planner_internal.h"
#include "autotune/tuning_cache_layers.h"
#include "core/error.h"

namespace tunecnn {
using tuned_planner_internal::steady_seconds;
namespace {

// Profiled entries are written to the file at most this often during a pass, and at its end
// (flush()): each write re-reads and rewrites the whole cache, which cost as much as profiling a
// small layer when it was done after every key.
constexpr double kSaveIntervalSeconds = 1.0;

// The user's own file named as the system layer too would be read twice and hide nothing.
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code error;
  return a == b || std::filesystem::equivalent(a, b, error);
}

}  // namespace

TunedPlanner::TunedPlanner(TunePolicy policy, std::filesystem::path cache_path,
                           TunerOptions options, std::string device_id,
                           std::map<std::string, std::string> device_fields,
                           std::filesystem::path system_cache_path)
    : policy_(policy),
      cache_path_(std::move(cache_path)),
      options_(std::move(options)),
      device_id_(std::move(device_id)),
      device_fields_(std::move(device_fields)) {
  TUNECNN_CHECK(!device_id_.empty(), "TunedPlanner: empty device id");
  last_save_s_ = steady_seconds();
  today_ = utc_date_today();
  if (!system_cache_path.empty() && !same_file(system_cache_path, cache_path_)) {
    LoadedTuningCache system = load_system_tuning_cache(system_cache_path);
    for (const std::string& w : system.warnings) warn(w);
    system_ = std::move(system.cache);
    if (!system_.empty()) system_path_ = std::move(system_cache_path);
  }
  LoadedTuningCache loaded = load_tuning_cache(cache_path_);
  for (const std::string& w : loaded.warnings) warn(w);
  adopt_user_cache(std::move(loaded.cache));
}

void TunedPlanner::adopt_user_cache(TuningCache user) {
  cache_ = system_.empty() ? std::move(user) : layered(user, system_);
}

TunedPlanner::TunedPlanner(TunePolicy policy, TuningCache cache, TunerOptions options,
                           std::string device_id, std::map<std::string, std::string> device_fields)
    : policy_(policy),
      options_(std::move(options)),
      device_id_(std::move(device_id)),
      device_fields_(std::move(device_fields)),
      cache_(std::move(cache)),
      save_failed_(true) {  // no file to write: entries stay in cache_
  TUNECNN_CHECK(!device_id_.empty(), "TunedPlanner: empty device id");
}

void TunedPlanner::store(const TuningEntry& entry, bool forcible) {
  cache_.put(device_id_, device_fields_, entry);
  // A --force-solver run measures only the forced solvers: its entries would make later
  // unforced runs believe nothing else was tried, so they stay in memory.
  if (save_failed_ || (forcible && !options_.only_solvers.empty())) return;
  unsaved_.push_back(entry);
  if (steady_seconds() - last_save_s_ >= kSaveIntervalSeconds) flush();
}

// Only the first use of a day costs a write, and a pass that also stores entries shares it: a
// cache used every day is rewritten once a day for its date, never per lookup.
void TunedPlanner::note_use() {
  const auto device = cache_.devices().find(device_id_);
  if (device != cache_.devices().end() && device->second.last_used < today_) use_undated_ = true;
}

void TunedPlanner::flush() {
  std::lock_guard lock(mutex_);
  if (save_failed_ || (unsaved_.empty() && !use_undated_)) return;
  const bool date_only = unsaved_.empty();
  try {
    LoadedTuningCache written = update_tuning_cache_file(cache_path_, [&](TuningCache& fresh) {
      for (const TuningEntry& entry : unsaved_) fresh.put(device_id_, device_fields_, entry);
      fresh.mark_used(device_id_, utc_date_today());
    });
    for (const std::string& w : written.warnings) warn(w);
    adopt_user_cache(std::move(written.cache));
  } catch (const std::exception& e) {
    // A date is bookkeeping: a read-only cache that serves cached runs stays silent, and a later
    // store still tries (and warns) on its own.
    if (!date_only) {
      // A cache we cannot write must not stop training: the decisions stay in cache_.
      save_failed_ = true;
      warn("cannot write the tuning cache " + cache_path_.string() + ": " + user_message(e) +
           "; tuned plans are kept for this run only");
    }
  }
  use_undated_ = false;
  unsaved_.clear();
  last_save_s_ = steady_seconds();
}

TunedPlanner::~TunedPlanner() {
  try {
    flush();
  } catch (...) {  // a destructor must not throw; flush() reports its own failures
  }
}

void TunedPlanner::store_transform_bandwidths(const std::map<std::string, double>& gbps) {
  const auto add = [&](TuningCache& cache) {
    DeviceThresholds t = cache.thresholds(device_id_);
    t.transform_gbps = gbps;
    cache.set_thresholds(device_id_, device_fields_, t);
    cache.mark_used(device_id_, utc_date_today());
  };
  if (!save_failed_) {
    try {
      LoadedTuningCache written = update_tuning_cache_file(cache_path_, add);
      adopt_user_cache(std::move(written.cache));
      return;
    } catch (const std::exception& e) {
      save_failed_ = true;
      warn("cannot write the tuning cache " + cache_path_.string() + ": " + user_message(e));
    }
  }
  add(cache_);
}

}  // namespace tunecnn
