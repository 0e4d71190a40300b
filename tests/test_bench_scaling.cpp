// `bench scaling` end to end: quick runs of `bench train` under mpirun on one and two processes,
// strong and weak scaling, a failing run, and its option errors. Rates depend on the machine, so
// only the table's shape and what must hold anywhere are checked: positive rates, P = 1 as its
// own baseline, and the allreduce sending every LeNet gradient once per step with two processes.
// Skipped when the build has no MPI.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "apps/bench/scaling_bench.h"
#include "core/communicator.h"
#include "core/error.h"
#include "core/module.h"
#include "core/rng.h"
#include "models/registry.h"
#include "tests/support/capture.h"
#include "tests/support/mpirun_env.h"

namespace tunecnn {
namespace {

// One line of the table.
struct Row {
  int procs = 0, global_batch = 0;
  double images_per_s = 0, min_images_per_s = 0, max_images_per_s = 0;
  std::string speedup, efficiency;  // "-" without a P = 1 row
  long long bytes_per_step = 0, buckets = 0;
  double allreduce_wait_ms = 0;
};

std::vector<Row> table_rows(const std::string& out) {
  static const std::regex row_pattern(
      R"(^\s*(\d+)\s+(\d+)\s+([0-9.]+) \(([0-9.]+)-([0-9.]+)\)\s+([0-9.]+|-)\s+([0-9.]+|-)\s+(\d+)\s+(\d+)\s+([0-9.]+)$)");
  std::vector<Row> rows;
  std::istringstream lines(out);
  std::smatch m;
  for (std::string line; std::getline(lines, line);)
    if (std::regex_match(line, m, row_pattern))
      rows.push_back(Row{std::stoi(m[1]), std::stoi(m[2]), std::stod(m[3]), std::stod(m[4]),
                         std::stod(m[5]), m[6], m[7], std::stoll(m[8]), std::stoll(m[9]),
                         std::stod(m[10])});
  return rows;
}

std::int64_t lenet_parameters() {
  Rng rng(1);
  return parameter_count(*build_model("lenet", ModelOptions{model_input_shape("lenet"), 10, {}, {}}, rng));
}

class BenchScaling : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!mpi_built()) GTEST_SKIP() << "this build has no MPI (install libopenmpi-dev and rebuild)";
    // The bench executable of this build: BUILD/tests/test_bench_scaling -> BUILD/apps/bench.
    bench_ = (std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path() / "apps" /
              "bench").string();
    ASSERT_TRUE(std::filesystem::exists(bench_))
        << bench_ << " is missing; build the bench target first (cmake --build BUILD --target bench)";
    testing::prepare_mpirun_environment();  // for the children
  }

  int run(std::vector<const char*> args, std::string* out = nullptr) {
    args.push_back("--bench");
    args.push_back(bench_.c_str());
    return testing::run_capturing_stdout(bench_scaling, "scaling", std::move(args), out);
  }

  std::string bench_;
};

TEST_F(BenchScaling, QuickLenetOnOneAndTwoProcesses) {
  std::string out;
  ASSERT_EQ(run({"--quick", "--model", "lenet", "--procs", "1,2"}, &out), 0);
  EXPECT_TRUE(std::regex_search(
      out, std::regex(R"((^|\n)round 1/1: P=1 [0-9.]+ images/s P=2 [0-9.]+ images/s\n)")))
      << out;
  const std::vector<Row> rows = table_rows(out);
  ASSERT_EQ(rows.size(), 2u) << out;
  for (const Row& row : rows) {
    EXPECT_EQ(row.global_batch, 64) << out;  // strong scaling: the same batch for every P
    EXPECT_GT(row.images_per_s, 0) << out;
    EXPECT_LE(row.min_images_per_s, row.images_per_s) << out;
    EXPECT_GE(row.max_images_per_s, row.images_per_s) << out;
    EXPECT_GE(row.allreduce_wait_ms, 0) << out;
  }
  const Row &one = rows[0], &two = rows[1];
  EXPECT_EQ(one.procs, 1);
  EXPECT_EQ(one.speedup, "1.00");
  EXPECT_EQ(one.efficiency, "1.00");
  EXPECT_EQ(one.bytes_per_step, 0);  // one process sends nothing
  EXPECT_EQ(one.buckets, 0);
  EXPECT_EQ(one.allreduce_wait_ms, 0);
  EXPECT_EQ(two.procs, 2);
  EXPECT_GT(std::stod(two.speedup), 0) << out;
  EXPECT_GT(std::stod(two.efficiency), 0) << out;
  EXPECT_NEAR(std::stod(two.efficiency), std::stod(two.speedup) / 2, 0.01) << out;
  EXPECT_EQ(two.bytes_per_step, 4 * lenet_parameters()) << out;  // every f32 gradient once
  EXPECT_GE(two.buckets, 1) << out;
}

TEST_F(BenchScaling, PerProcessBatchScalesTheGlobalBatch) {
  std::string out;
  ASSERT_EQ(run({"--quick", "--procs", "2", "--batch-size", "8", "--per-process-batch"}, &out), 0);
  EXPECT_NE(out.find("weak scaling (batch 8 per process)"), std::string::npos) << out;
  const std::vector<Row> rows = table_rows(out);
  ASSERT_EQ(rows.size(), 1u) << out;
  EXPECT_EQ(rows[0].procs, 2);
  EXPECT_EQ(rows[0].global_batch, 16);
  EXPECT_GT(rows[0].images_per_s, 0);
  EXPECT_EQ(rows[0].speedup, "-");  // no P = 1 to compare with
  EXPECT_EQ(rows[0].efficiency, "-");
}

TEST_F(BenchScaling, AFailedRunShowsItsCommandAndStderr) {
  ::testing::internal::CaptureStderr();
  try {
    run({"--quick", "--model", "no-such-model", "--procs", "1"});
    ::testing::internal::GetCapturedStderr();
    ADD_FAILURE() << "no error from a run that fails";
  } catch (const Error& e) {
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(std::string(e.what()).find("train --model no-such-model --batch-size 64"), std::string::npos)
        << e.what();
    EXPECT_NE(err.find("train --model no-such-model"), std::string::npos) << err;
    EXPECT_NE(err.find("no-such-model"), std::string::npos) << err;  // bench train's own error
    EXPECT_NE(err.find("its stderr:"), std::string::npos) << err;
  }
}

TEST_F(BenchScaling, RejectsBadOptions) {
  EXPECT_THROW(run({"--procs", "0"}), Error);
  EXPECT_THROW(run({"--procs", "1,x"}), Error);
  EXPECT_THROW(run({"--procs", ","}), Error);
  EXPECT_THROW(run({"--procs", "1,4", "--batch-size", "2"}), Error);  // processes without examples
  EXPECT_THROW(run({"--rounds", "0"}), Error);
  EXPECT_THROW(run({"--mpirun", "/nonexistent/mpirun", "--procs", "1"}), Error);
}

TEST(BenchScalingHelp, NamesItsOptions) {
  std::string out;
  ASSERT_EQ(testing::run_capturing_stdout(bench_scaling, "scaling", {"--help"}, &out), 0);
  for (const char* option : {"--model", "--batch-size", "--procs", "--rounds", "--steps", "--warmup",
                             "--per-process-batch", "--quick", "--threads", "--bench", "--mpirun"})
    EXPECT_NE(out.find(option), std::string::npos) << option << "\n" << out;
}

}  // namespace
}  // namespace tunecnn
