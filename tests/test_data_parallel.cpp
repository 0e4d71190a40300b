// DataParallel (apps/training/data_parallel.h) against a scripted communicator: how a rank
// receives rank 0's tuning (and keeps it in its own host's cache file), and how rank 0 stops a
// job whose ranks would not train alike. The real two-rank runs are in tests/mpi/.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <stdexcept>

#include "apps/training/data_parallel.h"
#include "autotune/tuning_cache.h"
#include "core/module.h"
#include "tests/support/scoped_env.h"
#include "tests/support/test_data.h"

namespace tunecnn {
namespace {

// Plays one rank of two: broadcast hands over `root_message`, gather returns `others` after this
// rank's text, abort throws so the test sees the message.
class ScriptedRank final : public Communicator {
 public:
  ScriptedRank(int rank, std::string host) : rank_(rank), host_(std::move(host)) {}
  std::string root_message;
  std::vector<std::string> others;
  double timeout_during_broadcast = 0;

  int rank() const override { return rank_; }
  int size() const override { return 2; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  std::string host() const override { return host_; }
  void allreduce_sum(float*, std::size_t, const char*) override {}
  void allreduce_sum(double*, std::size_t, const char*) override {}
  void allreduce_max(double*, std::size_t, const char*) override {}
  RequestId start_allreduce_sum(float*, std::size_t) override { return 0; }
  void progress() override {}
  void wait_all(const char*) override {}
  void broadcast(std::string& text, int, const char*) override {
    timeout_during_broadcast = timeout_seconds();
    if (rank_ != 0) text = root_message;
  }
  std::vector<std::string> gather(const std::string& text, const char*) override {
    std::vector<std::string> all = {text};
    all.insert(all.end(), others.begin(), others.end());
    return all;
  }
  void barrier(const char*) override {}
  [[noreturn]] void abort(const std::string& message) override { throw std::runtime_error(message); }

 private:
  int rank_;
  std::string host_;
};

TuningCache cache_with_mec_t(const std::string& device, int mec_t) {
  TuningCache cache;
  DeviceThresholds thresholds;
  thresholds.mec_t = mec_t;
  cache.set_thresholds(device, {{"cpu", device}}, thresholds);
  return cache;
}

std::string root_message(const std::string& host) {
  return DataParallel::tuning_message("dev-a", host, cache_with_mec_t("dev-a", 42));
}

TEST(DataParallel, ARankPlansFromRankZerosEntriesInMemoryUnderALongTimeout) {
  testing::TempDir dir;
  auto comm = std::make_shared<ScriptedRank>(1, "host-a");
  comm->root_message = root_message("host-a");  // same host: rank 0 already wrote the file
  comm->set_timeout_seconds(5);
  DataParallel dp(comm);
  const auto planner = dp.receive_tuning(dir.path() / "tuning.yaml", TunerOptions{});
  EXPECT_EQ(planner->device_id(), "dev-a");
  EXPECT_EQ(planner->policy(), TunePolicy::off);
  EXPECT_TRUE(planner->cache_path().empty());
  EXPECT_EQ(planner->cache().thresholds("dev-a").mec_t, 42);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "tuning.yaml"));
  EXPECT_GE(comm->timeout_during_broadcast, 3600);  // rank 0 may profile for minutes
  EXPECT_EQ(comm->timeout_seconds(), 5);            // and the step timeout is back
}

TEST(DataParallel, ARankOnAnotherHostMergesRankZerosEntriesIntoItsCacheFile) {
  testing::TempDir dir;
  const auto path = dir.path() / "tuning.yaml";
  save_tuning_cache(cache_with_mec_t("dev-b", 7), path);  // this host's own measurements
  auto comm = std::make_shared<ScriptedRank>(1, "host-b");
  comm->root_message = root_message("host-a");
  DataParallel(comm).receive_tuning(path, TunerOptions{});
  const LoadedTuningCache merged = load_tuning_cache(path);
  EXPECT_TRUE(merged.warnings.empty());
  EXPECT_EQ(merged.cache.thresholds("dev-a").mec_t, 42);
  EXPECT_EQ(merged.cache.thresholds("dev-b").mec_t, 7);
}

// Rank 0 planned over a system cache that this host has too: its view holds the system's
// threshold and entry beside its own measurement. Only the measurement lands in this host's file;
// copies of the system's would hide a later system cache there.
TEST(DataParallel, ARankOnAnotherHostKeepsOnlyWhatRankZeroMeasuredBeyondTheSystemCache) {
  testing::TempDir dir;
  const auto site = dir.path() / "site.yaml";
  TuningCache system = cache_with_mec_t("dev-a", 42);
  TuningEntry shipped;
  shipped.key = "conv fwd shipped";
  shipped.solver = "mec";
  shipped.candidates.push_back({"mec", {}, Layout::NCHW, 1.0, 0.0, 3, 0, true});
  system.put("dev-a", {{"cpu", "dev-a"}}, shipped);
  save_tuning_cache(system, site);
  testing::ScopedEnv with_site("TUNECNN_SYSTEM_TUNE_CACHE", site.c_str());

  TuningCache view = system;
  TuningEntry measured = shipped;
  measured.key = "conv fwd measured";
  view.put("dev-a", {{"cpu", "dev-a"}}, measured);
  auto comm = std::make_shared<ScriptedRank>(1, "host-b");
  comm->root_message = DataParallel::tuning_message("dev-a", "host-a", view);
  const auto path = dir.path() / "tuning.yaml";
  const auto planner = DataParallel(comm).receive_tuning(path, TunerOptions{});
  EXPECT_EQ(planner->cache(), view);  // the rank plans from all of rank 0's view

  const TuningCache kept = load_tuning_cache(path).cache;
  EXPECT_NE(kept.find("dev-a", "conv fwd measured"), nullptr);
  EXPECT_EQ(kept.find("dev-a", "conv fwd shipped"), nullptr);
  EXPECT_FALSE(kept.thresholds("dev-a").mec_t.has_value());
}

// Hosts sharing one cache file (a home folder on NFS): rank 0 wrote it, so the other hosts'
// first ranks find its entries there and do not rewrite it.
TEST(DataParallel, ARankOnAnotherHostLeavesASharedCacheFileThatHasRankZerosEntriesAlone) {
  testing::TempDir dir;
  const auto path = dir.path() / "tuning.yaml";
  save_tuning_cache(cache_with_mec_t("dev-a", 42), path);  // what rank 0 wrote to the shared file
  const auto inode_before = [&] { struct stat st {}; ::stat(path.c_str(), &st); return st.st_ino; }();
  auto comm = std::make_shared<ScriptedRank>(1, "host-b");
  comm->root_message = root_message("host-a");
  DataParallel(comm).receive_tuning(path, TunerOptions{});
  struct stat after {};
  ::stat(path.c_str(), &after);
  EXPECT_EQ(after.st_ino, inode_before) << "an atomic rewrite would have replaced the file";
}

// Rank 0's tuning budget cut a search short: the other ranks plan with that entry, as rank 0 does,
// but it stays out of every cache file, so a later run searches it in full.
TEST(DataParallel, AnEntryTheBudgetCutShortIsPlannedWithButNotWrittenOnAnotherHost) {
  testing::TempDir dir;
  TuningEntry whole, cut;
  whole.key = "conv fwd whole";
  whole.solver = cut.solver = "mec";
  whole.candidates.push_back({"mec", {}, Layout::NCHW, 1.0, 0.0, 3, 0, true});
  cut = whole;
  cut.key = "conv fwd cut";
  TuningCache stored, partial;
  stored.put("dev-a", {{"cpu", "dev-a"}}, whole);
  partial.put("dev-a", {{"cpu", "dev-a"}}, cut);
  auto comm = std::make_shared<ScriptedRank>(1, "host-b");
  comm->root_message = DataParallel::tuning_message("dev-a", "host-a", stored, partial);
  const auto path = dir.path() / "tuning.yaml";
  const auto planner = DataParallel(comm).receive_tuning(path, TunerOptions{});
  EXPECT_NE(planner->cache().find("dev-a", "conv fwd whole"), nullptr);
  EXPECT_NE(planner->cache().find("dev-a", "conv fwd cut"), nullptr);
  const TuningCache kept = load_tuning_cache(path).cache;
  EXPECT_NE(kept.find("dev-a", "conv fwd whole"), nullptr);
  EXPECT_EQ(kept.find("dev-a", "conv fwd cut"), nullptr);
}

class OneWeight : public Module {
 public:
  explicit OneWeight(float value) {
    register_parameter("w", Tensor::from_vector(std::vector<float>{value, 1.0f}, {2}));
  }
  Variable forward(const Variable& input) override { return input; }
  std::string describe() const override { return "OneWeight"; }
};

TEST(DataParallel, RankZeroStopsTheJobWhenARankPlannedOrStartsDifferently) {
  const OneWeight model(0.5f);  // weights checksum 0.5 + 1.0
  auto comm = std::make_shared<ScriptedRank>(0, "h");
  DataParallel dp(comm);
  // Every rank alike: nothing happens.
  comm->others = {"weights checksum 1.5\nconv1: NCHW ...\n"};
  EXPECT_NO_THROW(dp.check_same_start("conv1: NCHW ...\n", model));
  comm->others = {"weights checksum 1.5\nconv1: CHWN ...\n"};
  try {
    dp.check_same_start("conv1: NCHW ...\n", model);
    FAIL() << "a rank with another plan must stop the job";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("another layer plan"), std::string::npos) << e.what();
  }
  comm->others = {"weights checksum 2.5\nconv1: NCHW ...\n"};
  try {
    dp.check_same_start("conv1: NCHW ...\n", model);
    FAIL() << "a rank with other weights must stop the job";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("other initial weights"), std::string::npos) << e.what();
  }
}

// mpirun names a host it lost by its daemon's address, so rank 0 says which rank runs where.
TEST(DataParallel, RankZeroNamesEachRanksHostAndDaemonAddress) {
  EXPECT_EQ(daemon_address("1854865408.0;tcp://192.0.2.2:57345;tcp6://[fd00::2]:56617"), "192.0.2.2");
  EXPECT_EQ(daemon_address("1854865408.0;tcp6://[fd00::2]:56617"), "");
  const testing::ScopedEnv uri("OMPI_MCA_orte_local_daemon_uri", "7.0;tcp://10.0.0.1:4000");
  auto comm = std::make_shared<ScriptedRank>(0, "host-a");
  comm->others = {"host-b (10.0.0.2)"};
  EXPECT_EQ(DataParallel(comm).where_ranks_run(), "ranks: 0 on host-a (10.0.0.1), 1 on host-b (10.0.0.2)");
  EXPECT_EQ(DataParallel(std::make_shared<ScriptedRank>(1, "host-b")).where_ranks_run(), "");
}

TEST(DataParallel, WarnsWhenMpirunWouldNoticeALostHostAfterTheCollectiveTimeout) {
  const testing::ScopedEnv idle("OMPI_MCA_oob_tcp_keepalive_time", nullptr);
  const testing::ScopedEnv interval("OMPI_MCA_oob_tcp_keepalive_intvl", nullptr);
  const testing::ScopedEnv probes("OMPI_MCA_oob_tcp_keepalive_probes", nullptr);
  // OpenMPI's defaults: 300 + 9 x 20 s, later than the default timeout of 300 s.
  const std::string by_default = keepalive_warning(300);
  EXPECT_NE(by_default.find("after 480 s"), std::string::npos) << by_default;
  EXPECT_NE(by_default.find("--mca oob_tcp_keepalive_time"), std::string::npos) << by_default;
  EXPECT_EQ(keepalive_warning(600), "");
  {
    const testing::ScopedEnv shorter("OMPI_MCA_oob_tcp_keepalive_time", "10");
    const testing::ScopedEnv every("OMPI_MCA_oob_tcp_keepalive_intvl", "5");
    const testing::ScopedEnv three("OMPI_MCA_oob_tcp_keepalive_probes", "3");
    EXPECT_EQ(keepalive_warning(300), "");
    EXPECT_NE(keepalive_warning(20), "");  // 25 s is not before 20
  }
  const testing::ScopedEnv off("OMPI_MCA_oob_tcp_keepalive_time", "0");
  EXPECT_NE(keepalive_warning(3600).find("never"), std::string::npos);
}

}  // namespace
}  // namespace tunecnn
