// The YAML tuning cache (autotune/tuning_cache_parse.cpp): the input is the file's text. Its two
// readers, the fast one for the writer's own layout and yaml-cpp, must make the same of it: the
// same cache and warnings, or the same error. A cache that parses must also survive its own round
// trip: what to_yaml() writes must parse again, or the next run would move the user's cache aside
// as corrupt.
#include <cstdio>
#include <cstdlib>

#include "autotune/tuning_cache.h"
#include "autotune/tuning_cache_format.h"
#include "core/error.h"
#include "fuzz/fuzz_support.h"

namespace {

struct Reading {
  tunecnn::TuningCache cache;
  std::vector<std::string> warnings;
  std::string error;
  bool operator==(const Reading&) const = default;
};

Reading read_with(tunecnn::TuningCacheReader reader, std::string_view text) {
  Reading r;
  try {
    r.cache = tunecnn::parse_tuning_cache_with(reader, text, "fuzz.yaml", r.warnings);
  } catch (const tunecnn::Error& e) {
    r.error = e.message();
  }
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tunecnn;
  const std::string_view text = fuzz::as_text(data, size);
  const Reading fast = read_with(TuningCacheReader::fastest, text);
  if (!(fast == read_with(TuningCacheReader::yaml_cpp, text))) {
    std::fprintf(stderr, "the fast reader and yaml-cpp read the cache differently (fast: %s)\n",
                 fast.error.empty() ? "parsed" : fast.error.c_str());
    std::abort();
  }
  if (!fast.error.empty()) return 0;
  const std::string written = fast.cache.to_yaml();
  try {
    std::vector<std::string> again;
    parse_tuning_cache(written, "fuzz.yaml (written back)", again);
  } catch (const Error& e) {
    std::fprintf(stderr, "a parsed cache does not parse once written back: %s\n%s\n", e.what(),
                 written.c_str());
    std::abort();
  }
  return 0;
}
