// Data-parallel training across two hosts over TCP, and how it ends when the network or a host
// fails. The hosts are network namespaces on this machine (tests/mpi/two_hosts.h): `mpirun`
// runs on host A and starts rank 1 on host B through them, as it would over ssh.
#include <gtest/gtest.h>
#include <signal.h>

#include <cmath>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "autotune/tuning_cache.h"
#include "core/checkpoint.h"
#include "tests/mpi/job.h"
#include "tests/mpi/two_hosts.h"
#include "tests/support/test_data.h"

namespace tunecnn {
namespace {

namespace fs = std::filesystem;
using testing::Clock;
using testing::Job;
using testing::seconds_since;
using testing::TwoHosts;

// Skips where this machine cannot make the hosts, fails where making them went wrong.
#define MAKE_TWO_HOSTS(hosts, dir)                                                   \
  TwoHosts hosts(dir);                                                               \
  if (!hosts.unavailable().empty()) GTEST_SKIP() << hosts.unavailable();             \
  ASSERT_EQ(hosts.setup_error(), "")

// `train` on MNIST, one thread per process, planned without timing anything. (`--tune=off`, not
// `--tune off`: mpirun scans the whole command line, the program's options too, for its own
// `--tune FILE` and complains that it finds no file "off".)
std::vector<std::string> train(std::vector<std::string> args) {
  std::vector<std::string> command = {TUNECNN_TRAIN_BINARY, "--data", "mnist", "--data-dir",
                                      (testing::shared_data_dir() / "mnist").string(), "--threads", "1",
                                      "--epochs", "1", "--tune=off"};
  command.insert(command.end(), args.begin(), args.end());
  return command;
}

// What the job must say to prove its ranks ran on two hosts.
constexpr const char* kTwoHosts = "data parallel: 2 processes, 1 on this host";

// "epoch 1/1: train loss L acc A%, test loss T ..." -> {L, T}.
std::pair<double, double> losses(const std::string& output) {
  std::smatch match;
  if (!std::regex_search(output, match, std::regex("epoch 1/1: train loss (\\S+) .*test loss (\\S+) ")))
    return {NAN, NAN};
  return {std::stod(match[1]), std::stod(match[2])};
}

TEST(MpiHosts, TwoHostTrainingEqualsOneProcess) {
  testing::TempDir dir;
  MAKE_TWO_HOSTS(hosts, dir.path());
  const auto run = train({"--batch-size", "64", "--train-limit", "1280", "--test-limit", "500"});
  Job together(dir.path() / "together.log", hosts.mpirun(run));
  ASSERT_EQ(together.wait_exit(60), 0) << together.output();
  EXPECT_NE(together.output().find(kTwoHosts), std::string::npos) << together.output();
  Job alone(dir.path() / "alone.log", TwoHosts::on(hosts.a(), run));
  ASSERT_EQ(alone.wait_exit(60), 0) << alone.output();
  // Same global batches in the same order from the same weights: only the order in which the
  // gradients' halves are summed differs.
  const auto [train_loss, test_loss] = losses(together.output());
  const auto [want_train_loss, want_test_loss] = losses(alone.output());
  EXPECT_NEAR(train_loss, want_train_loss, 1e-4 * want_train_loss) << together.output() << alone.output();
  EXPECT_NEAR(test_loss, want_test_loss, 1e-4 * want_test_loss) << together.output() << alone.output();
}

// Rank 0 on host A tunes and writes A's cache; rank 1, the first rank on host B, must write the
// entries it receives into B's own cache so that B's next run need not tune again.
TEST(MpiHosts, EachHostsCacheGetsRankZerosEntries) {
  testing::TempDir dir;
  MAKE_TWO_HOSTS(hosts, dir.path());
  Job job(dir.path() / "log", hosts.mpirun(train({"--tune=cached", "--batch-size", "32",
                                                  "--train-limit", "128", "--test-limit", "64"})));
  ASSERT_EQ(job.wait_exit(120), 0) << job.output();
  ASSERT_NE(job.output().find(kTwoHosts), std::string::npos) << job.output();
  const TuningCache on_a = load_tuning_cache(hosts.a().tune_cache).cache;
  const TuningCache on_b = load_tuning_cache(hosts.b().tune_cache).cache;
  ASSERT_FALSE(on_a.empty()) << "rank 0 tuned nothing\n" << job.output();
  int entries = 0;
  for (const auto& [device_id, device] : on_a.devices())
    for (const auto& [key, entry] : device.entries) {
      const TuningEntry* copy = on_b.find(device_id, key);
      ASSERT_NE(copy, nullptr) << "host B's cache lacks " << key << "\n" << testing::read_text_file(hosts.b().tune_cache);
      EXPECT_EQ(*copy, entry) << key;
      ++entries;
    }
  EXPECT_GT(entries, 0);
}

// A run long enough to break (100 steps), checkpointed every 10 steps.
std::vector<std::string> checkpointed_run(const fs::path& checkpoints, int collective_timeout) {
  return train({"--batch-size", "64", "--train-limit", "6400", "--test-limit", "100", "--checkpoint-dir",
                checkpoints.string(), "--checkpoint-every", "10", "--collective-timeout",
                std::to_string(collective_timeout)});
}

// The job a fault ended lost nothing: its last checkpoint reads, and `--resume` on both hosts
// finishes the epoch from it.
void expect_resumes(const TwoHosts& hosts, const fs::path& dir, const std::vector<std::string>& run) {
  CheckpointData last;
  ASSERT_NO_THROW(last = load_checkpoint(dir / "checkpoints" / "last.ckpt"));
  const std::string batch = last.value("next_batch");
  EXPECT_NE(batch, "0");
  std::vector<std::string> resumed_run = run;
  resumed_run.push_back("--resume");
  Job resumed(dir / "resumed.log", hosts.mpirun(resumed_run));
  ASSERT_EQ(resumed.wait_exit(60), 0) << resumed.output();
  EXPECT_NE(resumed.output().find("at epoch 1, batch " + batch + "\n"), std::string::npos) << resumed.output();
  EXPECT_NE(resumed.output().find("epoch 1/1: train loss"), std::string::npos) << resumed.output();
}

// Waits for the job that a fault at `fault` should end; returns the seconds it took, after
// checking that it failed and left nothing running on either host.
double expect_job_ended(Job& job, const TwoHosts& hosts, Clock::time_point fault) {
  const int status = job.wait_exit(60);
  const double seconds = seconds_since(fault);
  EXPECT_NE(status, -1) << "the job still runs 60 s after the fault\n" << job.output();
  EXPECT_NE(status, 0) << job.output();
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (hosts.processes_left() > 0 && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(hosts.processes_left(), 0) << "processes still run on the hosts 10 s after the job ended";
  ::testing::Test::RecordProperty("seconds_to_end", std::to_string(seconds));
  return seconds;
}

// The job must end although rank 0 cannot reach host B to stop it. mpirun waits for every host's
// daemon to report its ranks stopped, so it ends only once it has noticed that it lost host B:
// with the TCP keepalive TwoHosts::mpirun sets (3 s), before the collective timeout. (Were the
// collective timeout first, rank 0's MPI_Abort would leave mpirun waiting on host B for TCP's
// retransmissions, about 15 minutes: docs/FAULTS.md.) mpirun's message names the host, not the
// rank.
TEST(MpiHosts, ALinkCutMidEpochEndsTheJobWithinTheCollectiveTimeout) {
  testing::TempDir dir;
  MAKE_TWO_HOSTS(hosts, dir.path());
  constexpr int kTimeout = 10;
  const auto run = checkpointed_run(dir.path() / "checkpoints", kTimeout);
  Job job(dir.path() / "log", hosts.mpirun(run));
  ASSERT_TRUE(job.wait_for_output("checkpoint saved", 60)) << job.output();
  ASSERT_NE(job.output().find(kTwoHosts), std::string::npos) << job.output();
  const auto cut = Clock::now();
  hosts.set_link(false);
  const double seconds = expect_job_ended(job, hosts, cut);
  EXPECT_LT(seconds, kTimeout + 10) << job.output();
  EXPECT_NE(job.output().find("lost communication with a remote daemon"), std::string::npos) << job.output();
  EXPECT_NE(job.output().find("on node " + hosts.b().address), std::string::npos) << job.output();
  // That address is rank 1's, as rank 0 said at the start; the tests' keepalive needs no warning.
  EXPECT_NE(job.output().find("1 on " + hosts.b().name + " (" + hosts.b().address + ")"), std::string::npos) << job.output();
  EXPECT_EQ(job.output().find("mpirun notices a lost host"), std::string::npos) << job.output();
  std::cout << "the job ended " << seconds << " s after the link was cut\n";
  hosts.set_link(true);
  expect_resumes(hosts, dir.path(), run);
}

TEST(MpiHosts, AKilledRankOnAnotherHostEndsTheJobWithinSeconds) {
  testing::TempDir dir;
  MAKE_TWO_HOSTS(hosts, dir.path());
  constexpr int kTimeout = 30;  // longer than it should take: the death ends the job, not the timeout
  const auto run = checkpointed_run(dir.path() / "checkpoints", kTimeout);
  Job job(dir.path() / "log", hosts.mpirun(run));
  ASSERT_TRUE(job.wait_for_output("checkpoint saved", 60)) << job.output();
  const pid_t victim = hosts.process_on(hosts.b(), TUNECNN_TRAIN_BINARY);
  ASSERT_GT(victim, 0) << "no train process on host B\n" << job.output();
  const auto killed = Clock::now();
  kill(victim, SIGKILL);
  const double seconds = expect_job_ended(job, hosts, killed);
  EXPECT_LT(seconds, 10) << job.output();
  EXPECT_NE(job.output().find("rank 1"), std::string::npos) << job.output();
  std::cout << "the job ended " << seconds << " s after rank 1 was killed\n";
  expect_resumes(hosts, dir.path(), run);
}

}  // namespace
}  // namespace tunecnn
