// The system layer under the user's tuning cache: where it is, reading it without ever writing or
// locking it, and the layered view the planner and `autotune show` read (tuning_cache_layers.h).
#include "autotune/tuning_cache_layers.h"

#include <cstdlib>
#include <exception>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <system_error>

#include "core/error.h"

namespace tunecnn {
namespace fs = std::filesystem;
namespace {

std::string read_whole_file(const fs::path& path) {
  TUNECNN_CHECK(fs::is_regular_file(path), path.string(), ": not a regular file");
  std::ifstream in(path, std::ios::binary);
  TUNECNN_CHECK(in.good(), path.string(), ": cannot be opened for reading");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  TUNECNN_CHECK(!in.bad(), path.string(), ": reading failed");
  return bytes.str();
}

// A file that is simply not there is the usual case (no site cache installed): true. Anything
// else that stops us from looking (a folder we may not enter) throws, to be reported.
bool absent(const fs::path& path) {
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (status.type() == fs::file_type::not_found) return true;
  TUNECNN_CHECK(!error, path.string(), ": ", error.message());
  return false;
}

template <class T>
void drop_if_equal(std::optional<T>& mine, const std::optional<T>& system) {
  if (mine == system) mine.reset();
}

DeviceThresholds thresholds_above(DeviceThresholds mine, const DeviceThresholds& system) {
  drop_if_equal(mine.mec_t, system.mec_t);
  drop_if_equal(mine.ct, system.ct);
  drop_if_equal(mine.nt, system.nt);
  std::erase_if(mine.transform_gbps, [&](const auto& pair) {
    const auto theirs = system.transform_gbps.find(pair.first);
    return theirs != system.transform_gbps.end() && theirs->second == pair.second;
  });
  return mine;
}

}  // namespace

fs::path default_system_tuning_cache_path() {
  if (const char* value = std::getenv("TUNECNN_SYSTEM_TUNE_CACHE")) return value;
  std::error_code error;
  const fs::path program = fs::read_symlink("/proc/self/exe", error);
  if (error || !program.has_parent_path()) return {};
  return program.parent_path().parent_path() / "share" / "tunecnn" / "tuning.yaml";
}

LoadedTuningCache load_system_tuning_cache(const fs::path& path) {
  LoadedTuningCache loaded;
  try {
    if (path.empty() || absent(path)) return loaded;
    loaded.cache = parse_tuning_cache(read_whole_file(path), path.string(), loaded.warnings);
  } catch (const std::exception& e) {
    return {TuningCache{},
            {"ignoring the system tuning cache: " + user_message(e) +
             " (the file is left as it is; only the user's cache is used)"}};
  }
  return loaded;
}

TuningCache layered(const TuningCache& user, const TuningCache& system) {
  TuningCache out = system;
  for (const auto& [id, mine] : user.devices()) {
    const auto below = system.devices().find(id);
    if (below == system.devices().end()) {
      out.put_device(mine);
      continue;
    }
    DeviceRecord device = mine;
    device.entries.insert(below->second.entries.begin(),
                          below->second.entries.end());  // keeps ours
    device.thresholds = first_known(mine.thresholds, below->second.thresholds);
    out.put_device(std::move(device));
  }
  return out;
}

TuningCache above_system(const TuningCache& view, const TuningCache& system) {
  TuningCache out;
  for (const auto& [id, device] : view.devices()) {
    const auto below = system.devices().find(id);
    if (below == system.devices().end()) {
      out.put_device(device);
      continue;
    }
    DeviceRecord mine = device;
    std::erase_if(mine.entries, [&](const auto& item) {
      const auto theirs = below->second.entries.find(item.first);
      return theirs != below->second.entries.end() && theirs->second == item.second;
    });
    mine.thresholds = thresholds_above(mine.thresholds, below->second.thresholds);
    if (!mine.entries.empty() || !(mine.thresholds == DeviceThresholds{}))
      out.put_device(std::move(mine));
  }
  return out;
}

}  // namespace tunecnn
