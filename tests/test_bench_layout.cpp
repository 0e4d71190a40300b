// `bench layout --quick`: runs end to end on the CPU (and on the GPU when there is one), prints
// the header and one row per layer x pair with every column, and rejects bad options.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "apps/bench/layout_bench.h"
#include "core/cuda_runtime.h"
#include "core/error.h"
#include "tests/support/capture.h"
#include "tests/support/expect_error.h"

namespace tunecnn {
namespace {

int run_bench(std::vector<const char*> args, std::string* out = nullptr) {
  return testing::run_capturing_stdout(bench_layout, "layout", std::move(args), out);
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// `bench layout --quick` on `device`: the header and a row per layer x pair with every column;
// the memcpy column names the yardstick, `copy_kinds` those allowed.
void expect_quick_table(const char* device, const std::vector<std::string>& copy_kinds) {
  std::string out;
  ASSERT_EQ(run_bench({"--quick", "--threads", "2", "--device", device}, &out), 0);
  std::istringstream in(out);
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header;
  std::string result;
  bool fingerprint = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# ", 0) == 0) fingerprint = true;
    else if (line.rfind("layer ", 0) == 0) header = words(line);
    else if (line.rfind("result ", 0) == 0) result = line;
    else if (!line.empty()) rows.push_back(words(line));
  }
  EXPECT_TRUE(fingerprint);
  EXPECT_NE(out.find(std::string("device ") + device), std::string::npos) << out;
  EXPECT_EQ(header, (std::vector<std::string>{"layer", "shape", "pair", "MiB", "ms", "GB/s",
                                              "memcpy_ms", "mc_GB/s", "memcpy", "pct", "naive_ms",
                                              "x_naive"}));
  // --quick: cv1 and cv3, each with the four default pairs, in that order.
  ASSERT_EQ(rows.size(), 8u) << out;
  const std::vector<std::string> pairs = {"NCHW->CHWN", "CHWN->NCHW", "NCHW->NHWC", "NHWC->NCHW"};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    ASSERT_EQ(r.size(), header.size()) << out;
    EXPECT_EQ(r[0], i < 4 ? "cv1" : "cv3");
    EXPECT_EQ(r[1], i < 4 ? "128x1x28x28" : "128x3x24x24");
    EXPECT_EQ(r[2], pairs[i % 4]);
    for (int col : {3, 4, 6, 10}) EXPECT_GT(std::stod(r[col]), 0) << r[col];  // sizes and times
    // Rates print with 2 decimals: a slow transform (the emulated GPU's NHWC, 100x the naive
    // kernel's time) can print 0.00.
    for (int col : {5, 7, 11}) EXPECT_GE(std::stod(r[col]), 0) << r[col];
    EXPECT_NE(std::find(copy_kinds.begin(), copy_kinds.end(), r[8]), copy_kinds.end()) << r[8];
    EXPECT_EQ(r[9].back(), '%');
  }
  EXPECT_NE(result.find("transforms=8 "), std::string::npos) << result;
  EXPECT_NE(result.find("below_50pct_of_memcpy="), std::string::npos) << result;
}

TEST(BenchLayout, QuickRunPrintsEveryColumn) {
  expect_quick_table("cpu", {"single", "tbb"});
}

// Li et al.'s yardstick on the GPU: a device-to-device memcpy. Without a GPU, an error that says
// so before any output.
TEST(BenchLayout, OnTheGpuAgainstADeviceToDeviceCopyOrAClearError) {
  if (cuda_device_count() > 0) return expect_quick_table("cuda", {"d2d"});
  std::string out;
  testing::expect_error([&] { run_bench({"--quick", "--device", "cuda"}, &out); }, {"GPU"});
  EXPECT_EQ(out, "");
}

TEST(BenchLayout, AllPairsAndConvLayerSets) {
  std::string out;
  ASSERT_EQ(run_bench({"--layers", "lenet", "--batch", "2", "--pairs", "all", "--rounds", "1",
                       "--round-ms", "1"},
                      &out),
            0);
  EXPECT_NE(out.find("lenet/conv1      2x1x28x28        NHWC->CHWN"), std::string::npos) << out;
  EXPECT_NE(out.find("result transforms=12 "), std::string::npos) << out;
}

TEST(BenchLayout, RejectsBadOptions) {
  EXPECT_THROW(run_bench({"--layers", "cv13"}), Error);
  EXPECT_THROW(run_bench({"--pairs", "NCHW->NCHW"}), Error);
  EXPECT_THROW(run_bench({"--pairs", "NCHW"}), Error);
  EXPECT_THROW(run_bench({"--pairs", "NCHW->HWCN"}), Error);
  EXPECT_THROW(run_bench({"--rounds", "0"}), Error);
  EXPECT_THROW(run_bench({"--device", "tpu"}), Error);
}

}  // namespace
}  // namespace tunecnn
