// The command line of each program: the input's first byte picks train, `autotune profile` or
// `bench conv`; the rest is the arguments, separated by NUL bytes. Each is parsed exactly as the
// program parses it (train_options, profile_command_line, conv_bench_options), without running
// anything. A UsageError (a tunecnn::Error) is the expected answer to a bad command line.
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "apps/autotune_cli/options.h"
#include "apps/autotune_cli/subcommands.h"
#include "apps/bench/conv_options.h"
#include "apps/training/train_command_line.h"
#include "core/error.h"
#include "fuzz/fuzz_support.h"

namespace {

std::vector<std::string> split_args(std::string_view text) {
  std::vector<std::string> args;
  for (std::size_t at = 0; at <= text.size() && args.size() < 64;) {
    const std::size_t end = std::min(text.find('\0', at), text.size());
    args.emplace_back(text.substr(at, end - at));
    at = end + 1;
  }
  return args;
}

void parse_train(const std::vector<std::string>& args) {
  std::vector<const char*> argv = {"train"};
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  tunecnn::CommandLine cli = tunecnn::train_command_line();
  if (cli.parse(static_cast<int>(argv.size()), argv.data())) tunecnn::train_options(cli);
}

void parse_autotune_profile(const std::vector<std::string>& args) {
  std::ostringstream out;
  tunecnn::SubcommandLine cli = tunecnn::profile_command_line();
  if (!cli.parse(args, out, 0, 0)) return;
  cli.options().get_int("batch");
  tunecnn::parse_device_option(cli.options());
}

void parse_bench_conv(const std::vector<std::string>& args) {
  std::vector<const char*> argv = {"bench conv"};
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  tunecnn::CommandLine cli("bench conv", "");
  tunecnn::declare_conv_bench_options(cli);
  if (cli.parse(static_cast<int>(argv.size()), argv.data())) tunecnn::conv_bench_options(cli);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  static std::ostringstream sink;
  std::cout.rdbuf(sink.rdbuf());  // --help prints to stdout
  sink.str({});
  const std::vector<std::string> args = split_args(tunecnn::fuzz::as_text(data + 1, size - 1));
  try {
    switch (data[0] % 3) {
      case 0: parse_train(args); break;
      case 1: parse_autotune_profile(args); break;
      default: parse_bench_conv(args); break;
    }
  } catch (const tunecnn::Error&) {
  }
  return 0;
}
