#pragma once
// `autotune`: the command line over the tuner and its YAML cache (profile, calibrate, show,
// explain, merge, diff, stats, prune). A library, so the tests drive exactly what the executable
// runs.
#include <iosfwd>
#include <string>
#include <vector>

namespace tunecnn {

// args: what follows the program name, e.g. {"show", "tuning.yaml"}. Returns the exit status:
// 0 success, 2 a usage error (unknown subcommand or option, missing argument); otherwise the
// subcommand's own status (diff: 1 when the caches differ, 2 on error; the rest: 1 on error).
int run_autotune(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace tunecnn
