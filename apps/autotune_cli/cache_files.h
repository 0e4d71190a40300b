#pragma once
// Reading a cache file the user named. Unlike load_tuning_cache, which serves training runs and
// moves an unusable file aside, these tools never touch their inputs: a missing or corrupt file
// is an error that names it.
#include <filesystem>
#include <iosfwd>

#include "autotune/tuning_cache.h"

namespace tunecnn {

// Throws Error naming `path` when it is missing, unreadable or not a usable cache. Entries that
// are skipped (malformed) are reported on `err`. Entries naming solvers this build lacks are
// kept, so merging caches from a newer build loses nothing.
TuningCache read_cache_file(const std::filesystem::path& path, std::ostream& err);

}  // namespace tunecnn
