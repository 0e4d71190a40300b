#include "apps/autotune_cli/options.h"

#include <ostream>

#include "autotune/fingerprint.h"
#include "autotune/tuning_cache.h"
#include "core/threading.h"

namespace tunecnn {

SubcommandLine::SubcommandLine(const std::string& usage, const std::string& summary)
    : cli_(usage, summary) {}

void SubcommandLine::option(const std::string& name, const std::string& default_value,
                            const std::string& help) {
  cli_.option(name, default_value, help);
  value_options_.insert(name);
}

void SubcommandLine::flag(const std::string& name, const std::string& help) {
  cli_.flag(name, help);
}

void SubcommandLine::common_options() {
  option("tune-cache", "",
         "tuning cache file (default: $TUNECNN_TUNE_CACHE, else "
         "$XDG_CACHE_HOME/tunecnn/tuning.yaml, else ~/.cache/tunecnn/tuning.yaml); the "
         "read-only system cache under it is $TUNECNN_SYSTEM_TUNE_CACHE (empty: none), else "
         "share/tunecnn/tuning.yaml beside the programs' folder");
  option("threads", "0",
         "CPU threads (0: all cores); part of the device fingerprint, so it selects which "
         "device section is this machine's");
}

// CommandLine takes only --options; positional words are picked out here, which needs to know
// which options consume the next word as their value.
std::vector<std::string> SubcommandLine::split_positional(const std::vector<std::string>& args) {
  std::vector<std::string> options;
  bool only_positional = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (only_positional || arg == "-" || arg.empty() || arg[0] != '-') {
      positional_.push_back(arg);
    } else if (arg == "--") {
      only_positional = true;
    } else {
      const bool short_output = arg == "-o" && value_options_.count("output") == 1;
      const std::string option = short_output ? "--output" : arg;
      options.push_back(option);
      const std::string name = option.substr(2);
      if (value_options_.count(name) == 1 && i + 1 < args.size()) options.push_back(args[++i]);
    }
  }
  return options;
}

bool SubcommandLine::parse(const std::vector<std::string>& args, std::ostream& out,
                           std::size_t min_positional, std::size_t max_positional) {
  for (const std::string& arg : args)
    if (arg == "--help" || arg == "-h") {
      out << cli_.help();  // CommandLine::parse would print to std::cout, not to `out`
      return false;
    }
  const std::vector<std::string> options = split_positional(args);
  std::vector<const char*> argv = {"autotune"};
  for (const std::string& option : options) argv.push_back(option.c_str());
  try {
    cli_.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const Error& e) {
    throw UsageError(e.message());
  }
  if (positional_.size() < min_positional || positional_.size() > max_positional) {
    std::string usage = cli_.help();
    throw UsageError(usage.substr(0, usage.find('\n')) + " (see --help)");
  }
  return true;
}

void apply_threads(const CommandLine& options) {
  int threads = 0;
  try {
    threads = options.get_int("threads");
  } catch (const Error& e) {
    throw UsageError(e.message());
  }
  if (threads < 0) throw UsageError("--threads must be 0 (all cores) or positive");
  set_num_threads(threads);
}

std::filesystem::path tune_cache_path(const CommandLine& options) {
  return options.has("tune-cache") ? std::filesystem::path(options.get("tune-cache"))
                                   : default_tuning_cache_path();
}

void device_option(SubcommandLine& cli, const std::string& what) {
  cli.option("device", "cpu",
             "cpu, or cuda (the first NVIDIA GPU; needs a build with -DTUNECNN_CUDA=ON): " + what);
}

Device parse_device_option(const CommandLine& options) {
  try {
    return parse_device(options.get("device"));
  } catch (const Error& e) {
    throw UsageError("--device: " + e.message());
  }
}

DeviceIdentity this_device(Device device) { return device_identity(device); }

}  // namespace tunecnn
