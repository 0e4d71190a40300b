// How a data-parallel job ends when a rank fails: `mpirun -np 2 train ...` is started here, one
// rank is killed or frozen mid-training, and the job must end with an error within a bounded time
// instead of hanging.
#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/test_data.h"

extern char** environ;

namespace tunecnn {
namespace {

using Clock = std::chrono::steady_clock;

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A running `mpirun -np 2 train ...` with its output in a file.
class Job {
 public:
  Job(const std::filesystem::path& log, std::vector<std::string> train_args) : log_(log) {
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    std::vector<std::string> args = {TUNECNN_MPIEXEC, "-np", "2", "--oversubscribe", TUNECNN_TRAIN_BINARY};
    args.insert(args.end(), train_args.begin(), train_args.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&files, STDOUT_FILENO, STDERR_FILENO);
    posix_spawn_file_actions_addopen(&files, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    EXPECT_EQ(posix_spawn(&pid_, argv[0], &files, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&files);
  }
  ~Job() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    for (pid_t rank : ranks_) kill(rank, SIGKILL);  // a frozen rank mpirun left behind
  }

  // Waits until the log contains `text`; false after `seconds` or when the job ended first.
  bool wait_for_output(const std::string& text, double seconds) {
    const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < deadline) {
      if (read_file(log_).find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  // The pid of the train process that is rank `rank`, found by its launcher environment.
  pid_t rank_pid(int rank) {
    const std::string wanted = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
      const std::string name = entry.path().filename();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      const std::string cmdline = read_file(entry.path() / "cmdline");
      if (cmdline.find(TUNECNN_TRAIN_BINARY) != 0) continue;
      const std::string env = read_file(entry.path() / "environ");
      if (env.find(wanted + '\0') == std::string::npos) continue;
      // Ours, not a concurrent test's: its parent is this job's mpirun.
      std::istringstream stat(read_file(entry.path() / "stat"));
      std::string pid, comm, state;
      pid_t parent = 0;
      stat >> pid >> comm >> state >> parent;
      if (parent != pid_) continue;
      ranks_.push_back(std::stoi(name));
      return ranks_.back();
    }
    return 0;
  }

  // mpirun's exit status, or -1 if it is still running after `seconds`.
  int wait_exit(double seconds) {
    const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -1;
  }

  std::string output() const { return read_file(log_); }

 private:
  std::filesystem::path log_;
  pid_t pid_ = 0;
  bool exited_ = false;
  std::vector<pid_t> ranks_;
};

// A full MNIST epoch on one thread per rank: long enough to interfere with.
std::vector<std::string> long_run(const std::filesystem::path& dir, const std::string& timeout) {
  return {"--data", "mnist", "--data-dir", (testing::shared_data_dir() / "mnist").string(),
          "--epochs", "3", "--threads", "1", "--tune", "off", "--tune-cache", (dir / "t.yaml").string(),
          "--collective-timeout", timeout};
}

TEST(MpiFailures, AKilledRankEndsTheJobWithAnErrorWithinSeconds) {
  testing::TempDir dir;
  Job job(dir.path() / "log", long_run(dir.path(), "20"));
  ASSERT_TRUE(job.wait_for_output("data parallel:", 60)) << job.output();
  std::this_thread::sleep_for(std::chrono::seconds(1));  // into the training steps
  const pid_t victim = job.rank_pid(1);
  ASSERT_GT(victim, 0) << "rank 1 not found\n" << job.output();
  const auto killed = Clock::now();
  kill(victim, SIGKILL);
  const int status = job.wait_exit(60);
  const double seconds = std::chrono::duration<double>(Clock::now() - killed).count();
  ASSERT_NE(status, -1) << "the job still runs 60 s after rank 1 was killed\n" << job.output();
  EXPECT_NE(status, 0) << job.output();
  EXPECT_LT(seconds, 30);
  EXPECT_NE(job.output().find("rank 1"), std::string::npos) << job.output();
}

// A frozen rank never answers, and mpirun sees nothing wrong: the other rank's collective timeout
// must end the job, naming the timeout.
TEST(MpiFailures, AHungRankEndsTheJobAfterTheCollectiveTimeout) {
  testing::TempDir dir;
  Job job(dir.path() / "log", long_run(dir.path(), "3"));
  ASSERT_TRUE(job.wait_for_output("data parallel:", 60)) << job.output();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const pid_t victim = job.rank_pid(1);
  ASSERT_GT(victim, 0) << "rank 1 not found\n" << job.output();
  const auto frozen = Clock::now();
  kill(victim, SIGSTOP);
  const int status = job.wait_exit(60);
  const double seconds = std::chrono::duration<double>(Clock::now() - frozen).count();
  kill(victim, SIGKILL);
  ASSERT_NE(status, -1) << "the job still runs 60 s after rank 1 froze\n" << job.output();
  EXPECT_NE(status, 0) << job.output();
  EXPECT_GE(seconds, 2.5);  // not before the timeout
  EXPECT_LT(seconds, 40);
  EXPECT_NE(job.output().find("--collective-timeout"), std::string::npos) << job.output();
}

}  // namespace
}  // namespace tunecnn
