// The YAML tuning cache (autotune/tuning_cache_parse.cpp): the input is the file's text. A cache
// that parses must also survive its own round trip: what to_yaml() writes must parse again, or
// the next run would move the user's cache aside as corrupt.
#include <cstdio>
#include <cstdlib>

#include "autotune/tuning_cache.h"
#include "core/error.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tunecnn;
  std::vector<std::string> warnings;
  TuningCache cache;
  try {
    cache = parse_tuning_cache(fuzz::as_text(data, size), "fuzz.yaml", warnings);
  } catch (const Error&) {
    return 0;
  }
  const std::string written = cache.to_yaml();
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
