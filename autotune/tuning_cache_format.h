#pragma once
// What the tuning cache's writer (tuning_cache_emit.cpp) and reader (tuning_cache_parse.cpp) agree
// on beyond tuning_cache.h. Internal to autotune/.
#include <string>
#include <string_view>
#include <vector>

#include "autotune/tuning_cache.h"

namespace tunecnn {

// The end marker is a YAML comment, invisible to parsers, that tells a complete file from one cut
// short at an entry boundary (which would otherwise parse cleanly with entries missing).
inline constexpr std::string_view kTuningCacheEndMarker = "# end of tunecnn-tuning-cache";

// How parse_tuning_cache reads the YAML: `fastest` reads the layout the writer uses with its own
// reader (yaml_node.h) and anything else with yaml-cpp; `yaml_cpp` reads every text with yaml-cpp,
// as before the fast reader. Both give the same cache, warnings and errors, which the tests and
// the tuning_cache fuzz target check.
enum class TuningCacheReader { fastest, yaml_cpp };
TuningCache parse_tuning_cache_with(TuningCacheReader reader, std::string_view text, const std::string& source,
                                   std::vector<std::string>& warnings, const SolverFilter& known = is_known_solver);

}  // namespace tunecnn
