#pragma once
// A fake clock for the tuner tests: every read moves 1 ms and is counted, so a test can say that
// a cache hit timed nothing, and the warnings the tuner gives are collected instead of printed.
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

  // Few repeats, no warm-up: fake time makes every call equal anyway.
  TunerOptions options() {
    TunerOptions o;
    o.warmup = 0;
    o.min_repeats = 2;
    o.max_repeats = 3;
    o.clock = [this] {
      ++calls;
      return now += 1e-3;
    };
    o.warn = [this](std::string_view w) { warnings.emplace_back(w); };
    return o;
  }

  // A planner for device `device`, whose fingerprint is {model: device}.
  std::shared_ptr<TunedPlanner> planner(TunePolicy policy, const std::filesystem::path& file,
                                        const std::string& device = "cpu-test") {
    return std::make_shared<TunedPlanner>(policy, file, options(), device,
                                          std::map<std::string, std::string>{{"model", device}});
  }
};

}  // namespace tunecnn::testing
