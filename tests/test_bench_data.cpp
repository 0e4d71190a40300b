// `bench data` end to end on imagenette-mini at a small side (both views, one short round), its
// help, and its option errors. Only the output's shape is checked: rates depend on the machine.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "apps/bench/data_bench.h"
#include "core/error.h"
#include "tests/support/capture.h"
#include "tests/support/test_data.h"

namespace tunecnn {
namespace {

int run_bench(std::vector<const char*> args, std::string* out = nullptr) {
  return testing::run_capturing_stdout(bench_data, "data", std::move(args), out);
}

std::vector<std::string> lines_starting(const std::string& out, const std::string& prefix) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) lines.push_back(line);
  return lines;
}

TEST(BenchData, ImagenetteMiniPrintsARoundAndBothViews) {
  const std::string dir = (testing::shared_data_dir() / "imagenette-mini").string();
  std::string out;
  ASSERT_EQ(
      run_bench({"--data", "imagenet", "--data-dir", dir.c_str(), "--model", "mobilenet-0.25-128",
                 "--batches", "2", "--batch-size", "4", "--rounds", "1", "--threads", "2"},
                &out),
      0);
  EXPECT_NE(out.find("# data train: imagenette-mini train, 160 images, 10 classes, crops 3x128x128 "
                     "from shorter side 146, 0 skipped"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("# data test: imagenette-mini val, 40 images"), std::string::npos) << out;
  const std::vector<std::string> rounds = lines_starting(out, "round ");
  ASSERT_EQ(rounds.size(), 1u) << out;
  EXPECT_TRUE(std::regex_match(
      rounds[0], std::regex(R"(round 1/1: train [0-9.]+ images/s, test [0-9.]+ images/s)")))
      << rounds[0];
  const std::vector<std::string> results = lines_starting(out, "result ");
  ASSERT_EQ(results.size(), 2u) << out;
  const char* views[] = {"train augment=on", "test augment=off"};
  for (int v = 0; v < 2; ++v) {
    const std::regex line(
        std::string("result data=imagenet view=") + views[v] +
        " model=mobilenet-0.25-128 batch=4 batches=2 rounds=1 threads=2 "
        "images_per_s=([0-9.]+) ms_per_image_per_thread=([0-9.]+) skipped_files=0");
    std::smatch m;
    ASSERT_TRUE(std::regex_match(results[v], m, line)) << results[v];
    EXPECT_GT(std::stod(m[1]), 0);
    EXPECT_GT(std::stod(m[2]), 0);
  }
}

TEST(BenchData, HelpNamesItsOptions) {
  std::string out;
  ASSERT_EQ(run_bench({"--help"}, &out), 0);
  for (const char* option :
       {"--data", "--data-dir", "--model", "--batch-size", "--batches", "--threads", "--rounds"})
    EXPECT_NE(out.find(option), std::string::npos) << option << "\n" << out;
}

TEST(BenchData, RejectsBadOptions) {
  const std::string dir = (testing::shared_data_dir() / "imagenette-mini").string();
  try {
    run_bench({"--data", "imagenet"});
    ADD_FAILURE() << "no error without --data-dir";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--data-dir"), std::string::npos) << e.what();
  }
  EXPECT_THROW(run_bench({"--data-dir", dir.c_str(), "--batches", "0"}), Error);
  EXPECT_THROW(run_bench({"--data-dir", dir.c_str(), "--rounds", "-1"}), Error);
  EXPECT_THROW(run_bench({"--data", "nonsense", "--data-dir", dir.c_str()}), Error);
}

}  // namespace
}  // namespace tunecnn
