#pragma once
// A program the MPI fault tests start and then break: its output goes to a log file the test
// watches, and the test waits for its exit with a deadline. Shared by test_mpi_failures (ranks on
// one host) and test_mpi_hosts (ranks in two network namespaces).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
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

#include "tests/support/mpirun_env.h"

extern char** environ;

namespace tunecnn::testing {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

inline std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// mpirun refuses to run as root unless told, and CI runs as root.
inline void allow_mpirun_as_root() { prepare_mpirun_environment(); }

// A running program (`mpirun ... train ...` or `train ...`) with its output in a file.
class Job {
 public:
  Job(const std::filesystem::path& log, std::vector<std::string> args) : log_(log) {
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&files, STDOUT_FILENO, STDERR_FILENO);
    posix_spawn_file_actions_addopen(&files, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    EXPECT_EQ(posix_spawnp(&pid_, argv[0], &files, nullptr, argv.data(), environ), 0) << args[0];
    posix_spawn_file_actions_destroy(&files);
  }
  ~Job() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    for (pid_t rank : ranks_) kill(rank, SIGKILL);  // a frozen rank mpirun left behind
  }
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  pid_t pid() const { return pid_; }

  // Waits until the log contains `text`; false after `seconds` or when the job ended first.
  bool wait_for_output(const std::string& text, double seconds) {
    const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < deadline) {
      if (output().find(text) != std::string::npos) return true;
      if (!running()) return output().find(text) != std::string::npos;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  // The pid of the `binary` process that is rank `rank` and a child of this job's mpirun, found
  // by its launcher environment; 0 when there is none. It is killed when the job is.
  pid_t rank_pid(int rank, const std::string& binary) {
    const std::string wanted = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
      const std::string name = entry.path().filename();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      if (read_text_file(entry.path() / "cmdline").find(binary) != 0) continue;
      if (read_text_file(entry.path() / "environ").find(wanted + '\0') == std::string::npos) continue;
      // Ours, not a concurrent test's: its parent is this job's mpirun.
      std::istringstream stat(read_text_file(entry.path() / "stat"));
      std::string pid, comm, state;
      pid_t parent = 0;
      stat >> pid >> comm >> state >> parent;
      if (parent != pid_) continue;
      ranks_.push_back(std::stoi(name));
      return ranks_.back();
    }
    return 0;
  }

  // The exit status (128 + N for signal N), or -1 if it is still running after `seconds`.
  int wait_exit(double seconds) {
    const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < deadline) {
      if (!running()) return status_;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -1;
  }

  std::string output() const { return read_text_file(log_); }

 private:
  std::filesystem::path log_;
  pid_t pid_ = 0;
  bool exited_ = false;
  int status_ = -1;
  std::vector<pid_t> ranks_;

  bool running() {
    if (exited_ || pid_ <= 0) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) != pid_) return true;
    exited_ = true;
    status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return false;
  }
};

}  // namespace tunecnn::testing
