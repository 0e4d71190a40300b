// The command line every program shares (apps/common/cli.h), and the one exit-status
// convention of train, bench and autotune: 0 done, 1 error, 2 a command line to fix.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "apps/common/cli.h"

namespace tunecnn {
namespace {

CommandLine example() {
  CommandLine cli("prog", "a test program");
  cli.option("epochs", "2", "epochs");
  cli.option("batch-size", "64", "batch");
  cli.option("lr", "0.02", "rate");
  cli.flag("resume", "resume");
  return cli;
}

// The UsageError message parsing `args` throws, or "" when it parses.
std::string usage_error(std::vector<const char*> args) {
  args.insert(args.begin(), "prog");
  CommandLine cli = example();
  try {
    cli.parse(static_cast<int>(args.size()), args.data());
  } catch (const UsageError& e) {
    return e.message();
  }
  return "";
}

TEST(CommandLine, ValuesFlagsAndDefaults) {
  CommandLine cli = example();
  const std::array<const char*, 6> args = {"prog", "--epochs", "5", "--lr=-0.5", "--resume", "--batch-size=--x"};
  ASSERT_TRUE(cli.parse(static_cast<int>(args.size()), args.data()));
  EXPECT_EQ(cli.get_int("epochs"), 5);
  EXPECT_DOUBLE_EQ(cli.get_double("lr"), -0.5);
  EXPECT_TRUE(cli.has("resume"));
  EXPECT_EQ(cli.get("batch-size"), "--x") << "--name=VALUE takes any value";
}

TEST(CommandLine, AnOptionWhereAValueShouldBeIsAnErrorNamingBoth) {
  EXPECT_EQ(usage_error({"--epochs", "--batch-size", "8"}),
            "option --epochs needs a value, but the next argument is the option --batch-size "
            "(write --epochs=VALUE for a value that starts with --)");
  EXPECT_EQ(usage_error({"--epochs"}), "option --epochs needs a value");
  EXPECT_EQ(usage_error({"--epoch", "3"}), "unknown option --epoch (see --help)");
  EXPECT_EQ(usage_error({"3"}), "unexpected argument '3' (options start with --; see --help)");
  EXPECT_EQ(usage_error({"--lr", "-1"}), "") << "a negative number is a value";
}

TEST(CommandLine, AOneLetterOptionTakesOneDash) {
  CommandLine cli("prog", "test");
  cli.option("o", "", "output");
  cli.option("lr", "0.02", "rate");
  const std::array<const char*, 5> args = {"prog", "-o", "net.onnx", "--lr", "-1"};
  ASSERT_TRUE(cli.parse(static_cast<int>(args.size()), args.data()));
  EXPECT_EQ(cli.get("o"), "net.onnx");
  EXPECT_EQ(cli.get("lr"), "-1");
  EXPECT_NE(cli.help().find("  -o VALUE"), std::string::npos) << cli.help();
  EXPECT_EQ(usage_error({"-e", "3"}), "unexpected argument '-e' (options start with --; see --help)");
}

TEST(CommandLine, ANumberThatIsNotOneIsAUsageError) {
  CommandLine cli = example();
  const std::array<const char*, 5> args = {"prog", "--epochs", "two", "--lr", "0.1x"};
  ASSERT_TRUE(cli.parse(static_cast<int>(args.size()), args.data()));
  EXPECT_THROW(cli.get_int("epochs"), UsageError);
  EXPECT_THROW(cli.get_double("lr"), UsageError);
  const std::array<const char*, 3> huge = {"prog", "--epochs", "99999999999"};
  ASSERT_TRUE(cli.parse(static_cast<int>(huge.size()), huge.data()));
  EXPECT_THROW(cli.get_int("epochs"), UsageError);
}

TEST(CommandLine, MemorySizesTakeBytesOrAKMOrGSuffix) {
  EXPECT_EQ(parse_memory_size("1048576"), std::size_t{1048576});
  EXPECT_EQ(parse_memory_size("4G"), std::size_t{4} << 30);
  EXPECT_EQ(parse_memory_size("512MiB"), std::size_t{512} << 20);
  EXPECT_EQ(parse_memory_size("64k"), std::size_t{64} << 10);
  EXPECT_EQ(parse_memory_size("3mb"), std::size_t{3} << 20);
  for (const char* bad : {"", "G", "4X", "4GG", "-1G", "1.5G", "4 G", "99999999999999999999"})
    EXPECT_EQ(parse_memory_size(bad), std::nullopt) << bad;
}

TEST(CommandLine, TheAllocatorCacheOptionTakesKeepOrBoundedAndElseIsAUsageError) {
  for (const auto& [value, expected] : {std::pair{"keep", CachePolicy::keep}, std::pair{"bounded", CachePolicy::bounded}}) {
    CommandLine cli("prog", "test");
    add_allocator_cache_option(cli);
    const std::array<const char*, 3> args = {"prog", "--allocator-cache", value};
    ASSERT_TRUE(cli.parse(static_cast<int>(args.size()), args.data()));
    EXPECT_EQ(allocator_cache_option(cli), expected);
  }
  CommandLine cli("prog", "test");
  add_allocator_cache_option(cli);
  const std::array<const char*, 1> none = {"prog"};
  ASSERT_TRUE(cli.parse(static_cast<int>(none.size()), none.data()));
  EXPECT_EQ(allocator_cache_option(cli), CachePolicy::keep) << "the default";
  const std::array<const char*, 3> bad = {"prog", "--allocator-cache", "lean"};
  ASSERT_TRUE(cli.parse(static_cast<int>(bad.size()), bad.data()));
  EXPECT_THROW(allocator_cache_option(cli), UsageError);
}

struct Outcome {
  int status;
  std::string output;
};

Outcome run(const std::string& command) {
  Outcome o{-1, ""};
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return o;
  std::array<char, 4096> buffer;
  while (std::fgets(buffer.data(), buffer.size(), pipe)) o.output += buffer.data();
  const int status = pclose(pipe);
  o.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return o;
}

TEST(ExitStatus, EveryProgramExitsTwoForABadCommandLineAndSaysWhy) {
  const std::string train = TUNECNN_TRAIN_BINARY, bench = TUNECNN_BENCH_BINARY,
                    autotune = TUNECNN_AUTOTUNE_BINARY;
  for (const auto& [command, says] : std::vector<std::pair<std::string, std::string>>{
           {train + " --epochs --batch-size 8", "train: error: option --epochs needs a value, but the next "
                                                "argument is the option --batch-size"},
           {train + " --frobnicate", "train: error: unknown option --frobnicate"},
           {train + " --epochs 0", "train: error: --epochs must be positive, got 0"},
           {train + " --epochs two", "train: error: --epochs expects a whole number, got 'two'"},
           {bench + " train --frobnicate", "bench: error: unknown option --frobnicate"},
           {bench + " conv --batch", "bench: error: option --batch needs a value"},
           {bench + " frobnicate", "bench: unknown command 'frobnicate'"},
           {autotune + " show --frobnicate", "autotune show: error: unknown option --frobnicate"}}) {
    const Outcome o = run(command);
    EXPECT_EQ(o.status, 2) << command << "\n" << o.output;
    EXPECT_NE(o.output.find(says), std::string::npos) << command << "\n" << o.output;
  }
  for (const std::string& program : {train, bench, autotune}) {
    const Outcome help = run(program + " --help");
    EXPECT_EQ(help.status, 0) << program;
    EXPECT_NE(help.output.find("Exit status: 0"), std::string::npos) << program << "\n" << help.output;
  }
}

#ifdef TUNECNN_HAVE_ONEDNN
// apps/common/openmp_wait.h: with oneDNN, each program re-executes itself once with
// OMP_WAIT_POLICY=PASSIVE, unless the user chose a policy. `bench threads` prints the one it ran with.
TEST(OpenMpWaitPolicy, ProgramsRunWithPassiveOpenMpThreadsUnlessTheUserChose) {
  const std::string bench_threads = std::string(TUNECNN_BENCH_BINARY) +
                                    " threads --layers lenet --batch 1 --rounds 1 --threads 1";
  const Outcome unset = run("env -u OMP_WAIT_POLICY " + bench_threads);
  EXPECT_EQ(unset.status, 0) << unset.output;
  EXPECT_NE(unset.output.find("OMP_WAIT_POLICY PASSIVE"), std::string::npos) << unset.output;
  const Outcome chosen = run("env OMP_WAIT_POLICY=active " + bench_threads);
  EXPECT_EQ(chosen.status, 0) << chosen.output;
  EXPECT_NE(chosen.output.find("OMP_WAIT_POLICY active"), std::string::npos) << chosen.output;
}
#endif

}  // namespace
}  // namespace tunecnn
