#pragma once
// Helpers shared by the tests that drive the autotune app and the device calibration.
#include <sstream>
#include <string>
#include <vector>

#include "apps/autotune_cli/autotune_app.h"
#include "autotune/calibration.h"

namespace tunecnn::testing {

// `autotune ARGS` in process: its exit status and what it printed.
struct AutotuneOutcome {
  int status = -1;
  std::string out, err;
};

inline AutotuneOutcome run_autotune_captured(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  AutotuneOutcome run;
  run.status = run_autotune(args, out, err);
  run.out = out.str();
  run.err = err.str();
  return run;
}

// Short timing (no warm-up, one to three calls, 10 ms caps), so calibration in tests stays
// quick; each measured point's line goes to `lines`.
inline CalibrationOptions quick_calibration_options(Device device, std::vector<std::string>* lines) {
  CalibrationOptions options;
  options.device = device;
  options.timing.warmup = 0;
  options.timing.min_repeats = 1;
  options.timing.max_repeats = 3;
  options.timing.max_seconds = 0.01;
  options.progress = [lines](const std::string& line) { lines->push_back(line); };
  return options;
}

}  // namespace tunecnn::testing
