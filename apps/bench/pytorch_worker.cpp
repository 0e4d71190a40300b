#include "apps/bench/pytorch_worker.h"

#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <vector>

#include "core/error.h"

extern char** environ;

namespace tunecnn {
namespace {

std::string geometry(const ConvProblem& p) {
  std::ostringstream out;
  out << p.mb << ' ' << p.ic << ' ' << p.ih << ' ' << p.iw << ' ' << p.oc << ' ' << p.kh << ' '
      << p.kw << ' ' << p.sh << ' ' << p.sw << ' ' << p.ph << ' ' << p.pw << ' ' << p.g;
  return out.str();
}

// The fields after "ok"; throws with the child's own message on "error ...".
std::istringstream ok_fields(const std::string& reply) {
  TUNECNN_CHECK(reply.rfind("error", 0) != 0, "PyTorch side: ", reply.substr(reply.find(' ') + 1));
  TUNECNN_CHECK(reply.rfind("ok ", 0) == 0, "PyTorch side: unexpected reply '", reply, "'");
  return std::istringstream(reply.substr(3));
}

// Spawns argv with `fd` as its stdin and stdout; stderr stays ours, so tracebacks show.
// Both socket ends are close-on-exec; dup2 clears the flag on the child's copies only.
pid_t spawn_with_socket(const std::vector<std::string>& args, int fd) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fd, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fd, STDOUT_FILENO);
  std::vector<char*> argv;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  TUNECNN_CHECK(rc == 0, "cannot start ", args[0], ": ", std::strerror(rc));
  return pid;
}

}  // namespace

std::string pytorch_time_request(const ConvProblem& p, const RepeatPolicy& r) {
  std::ostringstream out;
  out << "time " << to_string(p.dir) << ' ' << geometry(p) << ' ' << r.warmup << ' '
      << r.min_repeats << ' ' << r.max_repeats << ' ' << r.max_seconds << ' ' << r.settle;
  return out.str();
}

std::string pytorch_peak_request(const ConvProblem& p) {
  return "peak " + geometry(p);
}

PytorchTiming parse_pytorch_timing(const std::string& reply) {
  PytorchTiming t;
  std::istringstream in = ok_fields(reply);
  in >> t.median_ms >> t.min_ms >> t.max_ms >> t.runs;
  TUNECNN_CHECK(!in.fail() && t.runs > 0, "PyTorch side: bad timing reply '", reply, "'");
  return t;
}

PytorchPeak parse_pytorch_peak(const std::string& reply) {
  PytorchPeak peak;
  std::istringstream in = ok_fields(reply);
  in >> peak.peak_bytes >> peak.tensor_bytes >> peak.rss_delta_bytes;
  TUNECNN_CHECK(!in.fail(), "PyTorch side: bad peak reply '", reply, "'");
  return peak;
}

PytorchWorker::PytorchWorker(const std::string& python, const std::string& script, int threads) {
  TUNECNN_CHECK(access(script.c_str(), R_OK) == 0, "cannot read the PyTorch script ", script);
  // A socket rather than pipes: send(MSG_NOSIGNAL) reports a dead child as an error instead of
  // killing us with SIGPIPE.
  int fds[2];
  TUNECNN_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0,
                "socketpair: ", std::strerror(errno));
  fd_ = fds[0];
  // A throwing constructor runs no destructor: shut the child down here on every failure.
  try {
    pid_ = spawn_with_socket({python, script, "--serve", "--threads", std::to_string(threads)},
                             fds[1]);
    close(fds[1]);
    fds[1] = -1;
    const std::string hello = read_line();
    if (hello.rfind("ready ", 0) == 0) {
      description_ = hello.substr(6);
      return;
    }
    const bool told = hello.rfind("unavailable ", 0) == 0;
    TUNECNN_FAIL(python, " ", script, ": ", told ? hello.substr(12) : "unexpected '" + hello + "'");
  } catch (...) {
    if (fds[1] >= 0) close(fds[1]);
    shut_down();
    throw;
  }
}

PytorchWorker::~PytorchWorker() {
  shut_down();
}

void PytorchWorker::shut_down() {
  if (fd_ >= 0) {
    send(fd_, "quit\n", 5, MSG_NOSIGNAL);
    close(fd_);
    fd_ = -1;
  }
  if (pid_ > 0) waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

PytorchTiming PytorchWorker::time(const ConvProblem& problem, const RepeatPolicy& policy) {
  return parse_pytorch_timing(request(pytorch_time_request(problem, policy)));
}

PytorchPeak PytorchWorker::forward_peak(const ConvProblem& problem) {
  return parse_pytorch_peak(request(pytorch_peak_request(problem.with_dir(Direction::fwd))));
}

std::string PytorchWorker::request(const std::string& line) {
  send_line(line);
  return read_line();
}

void PytorchWorker::send_line(const std::string& line) {
  const std::string text = line + "\n";
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = send(fd_, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      broken_ = true;
      TUNECNN_FAIL("PyTorch side has exited (", std::strerror(errno), ")");
    }
    done += static_cast<std::size_t>(n);
  }
}

std::string PytorchWorker::read_line() {
  for (;;) {
    if (const auto end = buffer_.find('\n'); end != std::string::npos) {
      std::string line = buffer_.substr(0, end);
      buffer_.erase(0, end + 1);
      return line;
    }
    char chunk[4096];
    const ssize_t n = read(fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      broken_ = true;
      TUNECNN_FAIL("PyTorch side exited without replying (see its messages above)");
    }
    buffer_.append(chunk, static_cast<std::size_t>(n));
  }
}

}  // namespace tunecnn
