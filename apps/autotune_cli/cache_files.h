#pragma once
// Reading a cache file the user named, or the two layers `train` reads (the user's cache over the
// system cache). Unlike load_tuning_cache, which serves training runs and moves an unusable file
// aside, these tools never touch their inputs: a missing or corrupt file is an error that names
// it (a corrupt system cache, as for `train`, a warning).
#include <filesystem>
#include <iosfwd>
#include <string>
#include <string_view>

#include "autotune/tuning_cache.h"

namespace tunecnn {

// Throws Error naming `path` when it is missing, unreadable or not a usable cache. Entries that
// are skipped (malformed) are reported on `err`. Entries naming solvers this build lacks are
// kept, so merging caches from a newer build loses nothing.
TuningCache read_cache_file(const std::filesystem::path& path, std::ostream& err);

// The two layers `train` reads (tuning_cache_layers.h), as `show` and `explain` present them.
struct CacheLayers {
  std::filesystem::path user_path, system_path;
  TuningCache user, system;
  bool has_user = false;  // the user's file exists
  bool has_system() const { return !system.empty(); }
  TuningCache view() const;  // the user's layer over the system's
  // "user" or "system": the layer the view's entry for this device and key comes from.
  std::string_view layer_of(const std::string& device_id, const std::string& key) const;
};

// The user's cache at `user_path` when the file exists (read_cache_file: corrupt is an error)
// over the system layer at default_system_tuning_cache_path() (as `train` reads it: an unusable
// one is a warning on `err` and left out). Either may be absent, or both.
CacheLayers read_cache_layers(const std::filesystem::path& user_path, std::ostream& err);

}  // namespace tunecnn
