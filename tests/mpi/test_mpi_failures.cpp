// How a data-parallel job ends when a rank fails: `mpirun -np 2 train ...` is started here, one
// rank is killed or frozen mid-training, and the job must end with an error within a bounded time
// instead of hanging.
#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <thread>
#include <vector>

#include "tests/mpi/job.h"
#include "tests/support/test_data.h"

namespace tunecnn {
namespace {

using testing::Clock;
using testing::Job;
using testing::seconds_since;

// `mpirun -np 2 train ARGS...`, both ranks on this host.
std::vector<std::string> mpirun_train(std::vector<std::string> train_args) {
  testing::allow_mpirun_as_root();
  std::vector<std::string> args = {TUNECNN_MPIEXEC, "-np", "2", "--oversubscribe", TUNECNN_TRAIN_BINARY};
  args.insert(args.end(), train_args.begin(), train_args.end());
  return args;
}

// A full MNIST epoch on one thread per rank: long enough to interfere with.
std::vector<std::string> long_run(const std::filesystem::path& dir, const std::string& timeout) {
  return {"--data", "mnist", "--data-dir", (testing::shared_data_dir() / "mnist").string(),
          "--epochs", "3", "--threads", "1", "--tune", "off", "--tune-cache", (dir / "t.yaml").string(),
          "--collective-timeout", timeout};
}

TEST(MpiFailures, AKilledRankEndsTheJobWithAnErrorWithinSeconds) {
  testing::TempDir dir;
  Job job(dir.path() / "log", mpirun_train(long_run(dir.path(), "20")));
  ASSERT_TRUE(job.wait_for_output("data parallel:", 60)) << job.output();
  std::this_thread::sleep_for(std::chrono::seconds(1));  // into the training steps
  const pid_t victim = job.rank_pid(1, TUNECNN_TRAIN_BINARY);
  ASSERT_GT(victim, 0) << "rank 1 not found\n" << job.output();
  const auto killed = Clock::now();
  kill(victim, SIGKILL);
  const int status = job.wait_exit(60);
  const double seconds = seconds_since(killed);
  ASSERT_NE(status, -1) << "the job still runs 60 s after rank 1 was killed\n" << job.output();
  EXPECT_NE(status, 0) << job.output();
  EXPECT_LT(seconds, 30);
  EXPECT_NE(job.output().find("rank 1"), std::string::npos) << job.output();
}

// A frozen rank never answers, and mpirun sees nothing wrong: the other rank's collective timeout
// must end the job, naming the timeout.
TEST(MpiFailures, AHungRankEndsTheJobAfterTheCollectiveTimeout) {
  testing::TempDir dir;
  Job job(dir.path() / "log", mpirun_train(long_run(dir.path(), "3")));
  ASSERT_TRUE(job.wait_for_output("data parallel:", 60)) << job.output();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const pid_t victim = job.rank_pid(1, TUNECNN_TRAIN_BINARY);
  ASSERT_GT(victim, 0) << "rank 1 not found\n" << job.output();
  const auto frozen = Clock::now();
  kill(victim, SIGSTOP);
  const int status = job.wait_exit(60);
  const double seconds = seconds_since(frozen);
  kill(victim, SIGKILL);
  ASSERT_NE(status, -1) << "the job still runs 60 s after rank 1 froze\n" << job.output();
  EXPECT_NE(status, 0) << job.output();
  EXPECT_GE(seconds, 2.5);  // not before the timeout
  EXPECT_LT(seconds, 40);
  EXPECT_NE(job.output().find("--collective-timeout"), std::string::npos) << job.output();
}

}  // namespace
}  // namespace tunecnn
