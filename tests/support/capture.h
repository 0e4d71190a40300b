#pragma once
// Helpers the suites share for driving commands and writing test files.
#include <cstdint>
#include <string>
#include <vector>

namespace tunecnn::testing {

using BenchCommand = int (*)(int argc, const char* const* argv);

// Runs a bench subcommand's entry point as `bench` would (argv[0] is the subcommand's name),
// returns its exit status and, in `out`, what it printed to stdout. Capturing stops before an
// exception passes on, so a failing command does not swallow the next test's output.
int run_capturing_stdout(BenchCommand command, const char* name, std::vector<const char*> args,
                         std::string* out = nullptr);

// `bytes` as one gzip member (fast compression).
std::vector<std::uint8_t> gzip_bytes(const std::vector<std::uint8_t>& bytes);

}  // namespace tunecnn::testing
