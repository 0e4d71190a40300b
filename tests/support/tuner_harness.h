#pragma once
// A fake clock for the tuner tests: every read moves 1 ms and is counted, so a test can say that
// a cache hit timed nothing, and the warnings the tuner gives are collected instead of printed.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "autotune/tuned_planner.h"

namespace tunecnn::testing {

struct TunerHarness {
  int calls = 0;
  double now = 0;
  std::vector<std::string> warnings;
  // Each read moves 1 ms times (1 + jitter * u), u uniform in [-1, 1) from a generator seeded by
  // `seed`: measurement noise, different for each seed, around timings that are all equal.
  double jitter = 0;
  std::uint64_t seed = 1;

  // Few repeats, no warm-up: fake time makes every call equal anyway.
  TunerOptions options() {
    TunerOptions o;
    o.warmup = 0;
    o.min_repeats = 2;
    o.max_repeats = 3;
    o.clock = [this] {
      ++calls;
      seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;  // Knuth's MMIX LCG
      const double u = static_cast<double>(seed >> 11) / static_cast<double>(1ULL << 53) * 2 - 1;
      return now += 1e-3 * (1 + jitter * u);
    };
    o.warn = [this](std::string_view w) { warnings.emplace_back(w); };
    return o;
  }

  // A planner for device `device`, whose fingerprint is {model: device}, over the read-only
  // system cache `system` when one is named.
  std::shared_ptr<TunedPlanner> planner(TunePolicy policy, const std::filesystem::path& file,
                                        const std::string& device = "cpu-test",
                                        const std::filesystem::path& system = {}) {
    return std::make_shared<TunedPlanner>(policy, file, options(), device,
                                          std::map<std::string, std::string>{{"model", device}},
                                          system);
  }
};

}  // namespace tunecnn::testing
