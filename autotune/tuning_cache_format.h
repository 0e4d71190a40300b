#pragma once
// What the tuning cache's writer (tuning_cache_emit.cpp) and reader (tuning_cache_parse.cpp) agree
// on beyond tuning_cache.h. Internal to autotune/.
#include <string_view>

namespace tunecnn {

// The end marker is a YAML comment, invisible to parsers, that tells a complete file from one cut
// short at an entry boundary (which would otherwise parse cleanly with entries missing).
inline constexpr std::string_view kTuningCacheEndMarker = "# end of tunecnn-tuning-cache";

}  // namespace tunecnn
