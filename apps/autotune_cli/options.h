#pragma once
// The command line of one `autotune` subcommand: positional arguments (files, a key) mixed with
// --options, --help printed to the caller's stream, and the options every subcommand shares.
#include <filesystem>
#include <iosfwd>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "apps/common/cli.h"
#include "autotune/fingerprint.h"
#include "core/error.h"

namespace tunecnn {

class SubcommandLine {
 public:
  // usage: "autotune show [F]"; summary: what the subcommand does, printed under --help.
  SubcommandLine(const std::string& usage, const std::string& summary);
  void option(const std::string& name, const std::string& default_value, const std::string& help);
  void flag(const std::string& name, const std::string& help);
  // --tune-cache F and --threads N, which every subcommand accepts.
  void common_options();

  // false when --help was asked: the help went to `out`. "-o X" means "--output X". Throws
  // UsageError for an unknown option, a missing value, or a positional count outside
  // [min_positional, max_positional].
  bool parse(const std::vector<std::string>& args, std::ostream& out, std::size_t min_positional,
             std::size_t max_positional);

  const std::vector<std::string>& positional() const { return positional_; }
  const CommandLine& options() const { return cli_; }

 private:
  std::vector<std::string> split_positional(const std::vector<std::string>& args);
  CommandLine cli_;
  std::set<std::string> value_options_;  // options that take a value (the rest are flags)
  std::vector<std::string> positional_;
};

// Applies --threads (0: all cores). The device fingerprint counts the threads used, so this must
// run before this_device().
void apply_threads(const CommandLine& options);

// --tune-cache, else default_tuning_cache_path().
std::filesystem::path tune_cache_path(const CommandLine& options);

// --device cpu|cuda (declare it with device_option()); UsageError for anything else.
void device_option(SubcommandLine& cli, const std::string& what);
Device parse_device_option(const CommandLine& options);

// This machine's device as the tuning cache names it: the CPU under the current thread count, or
// the first GPU (device_identity).
DeviceIdentity this_device(Device device = Device::cpu);

}  // namespace tunecnn
