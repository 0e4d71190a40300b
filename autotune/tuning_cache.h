#pragma once
// The tuning cache: every device's fingerprint, calibrated thresholds and tuned decisions, kept in
// one human-readable YAML file so later runs and other machines reuse them.
//
// The file is shared by every process on the machine, so it is only ever replaced whole
// (temp file + fsync + rename) and every read-modify-write happens under an exclusive flock on
// PATH.lock. A file we cannot use (corrupt, truncated, another format, a newer version) is
// renamed aside with its bytes untouched and reported; we then go on with an empty cache rather
// than fail a training run over a cache. yaml-cpp stays inside tuning_cache_emit.cpp and the
// reader (tuning_cache_parse.cpp, which reads the writer's own layout without it, for speed).
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "autotune/records.h"

namespace tunecnn {

inline constexpr std::string_view kTuningCacheFormat = "tunecnn-tuning-cache";
inline constexpr int kTuningCacheVersion = 1;

class TuningCache {
 public:
  // nullptr when the device or the key is absent.
  const TuningEntry* find(const std::string& device_id, const std::string& key) const;
  // Adds or replaces the entry under entry.key, creating the device's section when new.
  void put(const std::string& device_id, const std::map<std::string, std::string>& fingerprint,
           TuningEntry entry);

  // Empty (all absent) for an unknown device.
  DeviceThresholds thresholds(const std::string& device_id) const;
  void set_thresholds(const std::string& device_id,
                      const std::map<std::string, std::string>& fingerprint,
                      const DeviceThresholds& thresholds);

  // Moves the device's last_used forward to `date` ("YYYY-MM-DD"); false when the section is
  // absent or already dated `date` or later, so callers write the file only when a day changed.
  bool mark_used(const std::string& device_id, const std::string& date);

  const std::map<std::string, DeviceRecord>& devices() const { return devices_; }
  void put_device(DeviceRecord device);  // replaces any section with the same id
  bool empty() const { return devices_.empty(); }

  // Block-style YAML in a fixed order (devices by id, entries by key, fingerprint fields by
  // name), so two saves of equal caches are byte-identical and diffs show only what changed.
  std::string to_yaml() const;

  bool operator==(const TuningCache&) const = default;

 private:
  DeviceRecord& device_section(const std::string& device_id,
                               const std::map<std::string, std::string>& fingerprint);
  std::map<std::string, DeviceRecord> devices_;
};

// Whether a solver name belongs to this build (the conv, pool and softmax registries of every
// device).
bool is_known_solver(std::string_view name);
using SolverFilter = std::function<bool(std::string_view)>;

// Parses the text of a cache file; `source` names it in messages. Throws Error when the file as a
// whole is unusable (not YAML, truncated, another format, a newer version). An entry that is
// malformed or names a solver `known` rejects is skipped, with a message in `warnings`.
TuningCache parse_tuning_cache(std::string_view text, const std::string& source,
                               std::vector<std::string>& warnings,
                               const SolverFilter& known = is_known_solver);

struct LoadedTuningCache {
  TuningCache cache;
  std::vector<std::string> warnings;  // each names the file and the problem
};

// Never throws for a bad or unreadable file: a missing file is an empty cache; an unusable one is
// moved aside (PATH.corrupt-YYYYMMDD-HHMMSS[-N]) and reported, and the cache is empty.
LoadedTuningCache load_tuning_cache(const std::filesystem::path& path);

// Replaces the file with exactly `cache` (atomically, under the lock), creating parent folders.
// To add to a cache that other processes may be writing, use update_tuning_cache_file.
void save_tuning_cache(const TuningCache& cache, const std::filesystem::path& path);

// The read-modify-write for concurrent tuners: under the exclusive lock, re-reads the file, lets
// `fn` change the fresh contents, and writes the result atomically. Entries already on disk are
// kept whatever this process loaded earlier. Entries naming solvers this build does not know are
// kept too (a newer build may have written them); if the file had skipped (malformed) entries,
// its bytes are first copied to PATH.bad-N, so nothing is lost. Returns what was written.
LoadedTuningCache update_tuning_cache_file(const std::filesystem::path& path,
                                           const std::function<void(TuningCache&)>& fn);

// Both caches' devices and entries. Where both hold a key for a device, the better-measured entry
// wins: more timed runs over all its candidates, then the newer provenance date, then `a`.
// Each threshold comes from `a` when it has it, else from `b`; last_used is the later of the two.
TuningCache merge(const TuningCache& a, const TuningCache& b);
// Each of a's thresholds when a has it, else b's (per layout pair for the transform bandwidths).
DeviceThresholds first_known(const DeviceThresholds& a, const DeviceThresholds& b);

// The user's cache: $TUNECNN_TUNE_CACHE when set, else $XDG_CACHE_HOME/tunecnn/tuning.yaml, else
// ~/.cache/tunecnn/tuning.yaml. The read-only system layer under it: tuning_cache_layers.h.
std::filesystem::path default_tuning_cache_path();

// The time now in UTC through strftime's `format` ("%Y-%m-%d", ...).
std::string utc_now_text(const char* format);
// Today's date in UTC as "YYYY-MM-DD", the form of DeviceRecord::last_used.
inline std::string utc_date_today() { return utc_now_text("%Y-%m-%d"); }

}  // namespace tunecnn
