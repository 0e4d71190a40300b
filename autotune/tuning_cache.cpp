// The tuning cache in memory (find, put, thresholds) and on disk: loading, atomic saving under the
// file lock, the read-modify-write that keeps what other processes wrote, moving an unusable file
// aside, merging two caches, and the default location. The YAML format is in
// tuning_cache_emit.cpp (writing) and tuning_cache_parse.cpp (reading).
#include "autotune/tuning_cache.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <optional>
#include <sstream>

#include "autotune/cache_lock.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/types.h"
#include "ops/conv/registry.h"
#include "ops/pool/registry.h"
#include "ops/softmax/registry.h"

namespace tunecnn {
namespace fs = std::filesystem;

// ---- the in-memory cache ----

DeviceRecord& TuningCache::device_section(const std::string& device_id,
                                          const std::map<std::string, std::string>& fingerprint) {
  DeviceRecord& device = devices_[device_id];
  device.id = device_id;
  if (device.fingerprint.empty()) device.fingerprint = fingerprint;
  return device;
}

const TuningEntry* TuningCache::find(const std::string& device_id, const std::string& key) const {
  const auto device = devices_.find(device_id);
  if (device == devices_.end()) return nullptr;
  const auto entry = device->second.entries.find(key);
  return entry == device->second.entries.end() ? nullptr : &entry->second;
}

void TuningCache::put(const std::string& device_id,
                      const std::map<std::string, std::string>& fingerprint, TuningEntry entry) {
  TUNECNN_CHECK(!entry.key.empty(), "a tuning entry needs a key");
  std::string key = entry.key;
  device_section(device_id, fingerprint).entries[std::move(key)] = std::move(entry);
}

DeviceThresholds TuningCache::thresholds(const std::string& device_id) const {
  const auto device = devices_.find(device_id);
  return device == devices_.end() ? DeviceThresholds{} : device->second.thresholds;
}

void TuningCache::set_thresholds(const std::string& device_id,
                                 const std::map<std::string, std::string>& fingerprint,
                                 const DeviceThresholds& thresholds) {
  device_section(device_id, fingerprint).thresholds = thresholds;
}

// ISO dates compare correctly as strings.
bool TuningCache::mark_used(const std::string& device_id, const std::string& date) {
  const auto device = devices_.find(device_id);
  if (device == devices_.end() || device->second.last_used >= date) return false;
  device->second.last_used = date;
  return true;
}

void TuningCache::put_device(DeviceRecord device) {
  TUNECNN_CHECK(!device.id.empty(), "a tuning-cache device needs an id");
  std::string id = device.id;
  devices_[std::move(id)] = std::move(device);
}

// Every device's registries: a GPU section's entries name GPU solvers (cudnn), which the CPU's
// registry lacks; checking that one alone skipped them at every load, so the GPU re-tuned them.
bool is_known_solver(std::string_view name) {
  for (Device device : {Device::cpu, Device::cuda})
    if (find_conv_solver(name, device) != nullptr || find_pool_solver(name, device) != nullptr ||
        find_softmax_solver(name, device) != nullptr)
      return true;
  return false;
}

// ---- files, locking and bad files ----
namespace {

// nullopt when the file does not exist.
std::optional<std::string> read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (!fs::exists(path)) return std::nullopt;
    TUNECNN_FAIL("cannot read the tuning cache ", path.string(), ": ", std::strerror(errno));
  }
  std::ostringstream bytes;
  bytes << in.rdbuf();
  TUNECNN_CHECK(!in.bad(), "reading the tuning cache ", path.string(), " failed");
  return bytes.str();
}

// PATH + suffix, or PATH + suffix + "-N" for the first N not taken. Called under the lock.
fs::path free_name(const fs::path& path, const std::string& suffix) {
  const std::string base = path.string() + suffix;
  fs::path candidate = base;
  for (int n = 1; fs::exists(candidate); ++n) candidate = base + "-" + std::to_string(n);
  return candidate;
}

// Renamed, not copied: the bytes stay exactly as they were, and the next writer starts afresh.
fs::path move_aside(const fs::path& path) {
  const fs::path aside = free_name(path, ".corrupt-" + utc_now_text("%Y%m%d-%H%M%S"));
  fs::rename(path, aside);
  return aside;
}

bool accept_any_solver(std::string_view) {
  return true;
}

// Under the lock: the file's contents, or, when it is unusable, an empty cache after the file has
// been moved aside (with a warning saying where).
LoadedTuningCache read_or_set_aside(const fs::path& path, const SolverFilter& known) {
  LoadedTuningCache loaded;
  const std::optional<std::string> text = read_text(path);
  if (!text) return loaded;
  try {
    loaded.cache = parse_tuning_cache(*text, path.string(), loaded.warnings, known);
  } catch (const Error& e) {
    const fs::path aside = move_aside(path);
    loaded.cache = TuningCache{};
    loaded.warnings = {e.message() + "; moved it aside to " + aside.string() +
                       " and started with an empty tuning cache"};
  }
  return loaded;
}

void create_parent(const fs::path& path) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
}

// The cache is a file we may replace and, when unreadable, move aside. A folder (or a device, a
// socket) at its path is the user's: refused before anything reads, moves or writes it.
void require_cache_file(const fs::path& path) {
  const fs::file_status status = fs::status(path);
  if (!fs::exists(status) || fs::is_regular_file(status)) return;
  TUNECNN_FAIL("the tuning cache ", path.string(), " is ", fs::is_directory(status) ? "a folder" : "not a regular file",
               ": name a file (--tune-cache FILE, or $TUNECNN_TUNE_CACHE); it is left as it is");
}

}  // namespace

LoadedTuningCache load_tuning_cache(const fs::path& path) {
  require_cache_file(path);
  LoadedTuningCache loaded;
  std::string problem;
  try {
    const std::optional<std::string> text = read_text(path);
    if (!text) return loaded;
    loaded.cache = parse_tuning_cache(*text, path.string(), loaded.warnings, is_known_solver);
    return loaded;
  } catch (const std::exception& e) {
    problem = user_message(e);
  }
  // Unusable as read. Take the lock before moving it aside: another process may have replaced it
  // with a good file meanwhile, and read_or_set_aside re-reads before deciding.
  try {
    CacheLock lock(path);
    return read_or_set_aside(path, is_known_solver);
  } catch (const std::exception& e) {
    return {TuningCache{},
            {problem + "; it could not be moved aside (" + user_message(e) +
             "), so it is left in place and the tuning cache starts empty"}};
  }
}

void save_tuning_cache(const TuningCache& cache, const fs::path& path) {
  require_cache_file(path);
  create_parent(path);
  CacheLock lock(path);
  write_file_atomically(path, cache.to_yaml());
}

namespace {
// Once per process: a cache whose writers cannot trust flock says which lock they take instead.
void warn_once_about_the_lock(const fs::path& path, std::vector<std::string>& warnings) {
  static std::atomic<bool> warned{false};
  const CacheLockChoice choice = cache_lock_choice(path);
  if (choice.scheme == CacheLockScheme::flock || warned.exchange(true)) return;
  warnings.push_back("tuning cache " + path.string() + ": " + choice.why + "; its writers lock it with " +
                     path.string() + ".lock.owner (created with O_EXCL) instead");
}
}  // namespace

LoadedTuningCache update_tuning_cache_file(const fs::path& path,
                                           const std::function<void(TuningCache&)>& fn) {
  require_cache_file(path);
  create_parent(path);
  CacheLock lock(path);
  LoadedTuningCache loaded = read_or_set_aside(path, accept_any_solver);
  // Entries we had to skip would vanish on rewrite; keep the file's bytes where a person can
  // recover them.
  if (!loaded.warnings.empty() && fs::exists(path)) {
    const fs::path copy = free_name(path, ".bad");
    fs::copy_file(path, copy);
    loaded.warnings.push_back(path.string() + ": had unreadable parts; its bytes were copied to " +
                              copy.string() + " before rewriting");
  }
  fn(loaded.cache);
  write_file_atomically(path, loaded.cache.to_yaml());
  warn_once_about_the_lock(path, loaded.warnings);
  return loaded;
}

// ---- merge and the default location ----
namespace {

long total_runs(const TuningEntry& entry) {
  long runs = 0;
  for (const CandidateResult& c : entry.candidates) runs += c.runs;
  return runs;
}

// ISO 8601 UTC dates of one format compare correctly as strings.
bool better_measured(const TuningEntry& b, const TuningEntry& a) {
  const long runs_a = total_runs(a), runs_b = total_runs(b);
  if (runs_b != runs_a) return runs_b > runs_a;
  return b.provenance.date > a.provenance.date;
}

template <class T>
std::optional<T> first_known(const std::optional<T>& a, const std::optional<T>& b) {
  return a ? a : b;
}

}  // namespace

DeviceThresholds first_known(const DeviceThresholds& a, const DeviceThresholds& b) {
  DeviceThresholds out = a;
  out.mec_t = first_known(a.mec_t, b.mec_t);
  out.ct = first_known(a.ct, b.ct);
  out.nt = first_known(a.nt, b.nt);
  // std::map::insert keeps a's bandwidth for every pair a has.
  out.transform_gbps.insert(b.transform_gbps.begin(), b.transform_gbps.end());
  return out;
}

TuningCache merge(const TuningCache& a, const TuningCache& b) {
  TuningCache out = a;
  for (const auto& [id, theirs] : b.devices()) {
    const auto mine = a.devices().find(id);
    if (mine == a.devices().end()) {
      out.put_device(theirs);
      continue;
    }
    DeviceRecord merged = mine->second;
    merged.last_used = std::max(merged.last_used, theirs.last_used);
    merged.thresholds = first_known(merged.thresholds, theirs.thresholds);
    for (const auto& [key, entry] : theirs.entries) {
      const auto existing = merged.entries.find(key);
      if (existing == merged.entries.end() || better_measured(entry, existing->second))
        merged.entries[key] = entry;
    }
    out.put_device(std::move(merged));
  }
  return out;
}

fs::path default_tuning_cache_path() {
  const auto env = [](const char* name) -> std::string {
    const char* value = std::getenv(name);
    return value != nullptr ? value : "";
  };
  if (const std::string explicit_path = env("TUNECNN_TUNE_CACHE"); !explicit_path.empty())
    return explicit_path;
  // The XDG spec says a relative XDG_CACHE_HOME is invalid and must be ignored.
  if (const std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty() && fs::path(xdg).is_absolute())
    return fs::path(xdg) / "tunecnn" / "tuning.yaml";
  if (const std::string home = env("HOME"); !home.empty())
    return fs::path(home) / ".cache" / "tunecnn" / "tuning.yaml";
  return fs::path("tunecnn-tuning.yaml");  // no home at all: the working folder
}

std::string utc_now_text(const char* format) {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[64];
  std::strftime(text, sizeof text, format, &utc);
  return text;
}

}  // namespace tunecnn
