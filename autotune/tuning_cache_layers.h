#pragma once
// The two layers of tuning caches: the user's cache (read and written; tuning_cache.h) over a
// read-only system cache that a site or a release ships beside the programs, so that a fresh
// machine of a known kind starts tuned (MIOpen's system database under its user database).
//
// Lookups read the user's layer first, then the system's; every write goes to the user's. The
// system file is only ever read: never locked, moved aside or rewritten. A missing system file
// is normal and silent; an unusable one is reported, naming it, and ignored, since a site file
// must never fail a user's run.
#include <filesystem>

#include "autotune/tuning_cache.h"

namespace tunecnn {

// $TUNECNN_SYSTEM_TUNE_CACHE when set (set but empty: no system layer, an empty path), else
// share/tunecnn/tuning.yaml beside the folder of the running program (<prefix>/bin/train reads
// <prefix>/share/tunecnn/tuning.yaml); empty when the program's own path cannot be found.
std::filesystem::path default_system_tuning_cache_path();

// Reads the system layer at `path` without writing or locking anything. A missing file (or an
// empty path) is an empty cache without warnings; a file that cannot be used (unreadable,
// corrupt, another format, a folder) is an empty cache with one warning naming it. Entries that
// are malformed or name solvers this build lacks are skipped with warnings, as for the user's.
LoadedTuningCache load_system_tuning_cache(const std::filesystem::path& path);

// The layered view: every device section of both; within a section present in both, the user's
// entry for a key hides the system's, and each threshold comes from the user's when it has it.
// Unlike merge(), which of two entries is better measured does not matter: the user's layer is
// what this user measured or chose, and it always wins.
TuningCache layered(const TuningCache& user, const TuningCache& system);

// The part of a layered view that the system layer does not supply: every entry and threshold
// of `view` except those equal to the system's for the same device (sections left empty are
// dropped). A data-parallel rank on another host keeps rank 0's view in its own user cache this
// way, without copying the system cache the hosts share into it, where the copies would hide a
// later system cache.
TuningCache above_system(const TuningCache& view, const TuningCache& system);

}  // namespace tunecnn
