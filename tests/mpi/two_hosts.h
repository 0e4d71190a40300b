#pragma once
// Two network "hosts" on this machine for the multi-host fault tests: Linux network namespaces
// joined by a veth pair, each with its own host name (a UTS namespace) and its own tuning cache,
// so that tunecnn and OpenMPI see two hosts talking TCP. `mpirun` runs on host A and reaches
// host B through a launcher agent that stands in for ssh. Making namespaces needs root
// (CAP_SYS_ADMIN); where that fails, unavailable() says why and the tests skip.
//
// The file system is shared, as a home folder on NFS would be, so both hosts read the same data
// and checkpoint folder; each host's tuning cache is its own file ($TUNECNN_TUNE_CACHE).
#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace tunecnn::testing {

class TwoHosts {
 public:
  struct Host {
    std::string name;     // its network namespace and its host name
    std::string address;  // on the veth pair's subnet
    std::string link;     // its end of the veth pair
    std::filesystem::path enter;       // script: runs its arguments on this host
    std::filesystem::path tune_cache;  // $TUNECNN_TUNE_CACHE there
  };

  // Makes the hosts, their scripts and caches under `dir`.
  explicit TwoHosts(const std::filesystem::path& dir);
  // Kills every process left on either host and deletes the namespaces (and so the veth pair).
  ~TwoHosts();
  TwoHosts(const TwoHosts&) = delete;
  TwoHosts& operator=(const TwoHosts&) = delete;

  // Why this machine cannot make the hosts (not root, no namespaces): the tests skip.
  const std::string& unavailable() const { return unavailable_; }
  // What went wrong making them where it should have worked: the tests fail.
  const std::string& setup_error() const { return setup_error_; }

  const Host& a() const { return a_; }
  const Host& b() const { return b_; }

  // The command line that runs `program` (with its arguments) as rank 0 on host A and rank 1 on
  // host B: mpirun started on A, TCP over the veth pair only, ranks not bound to cores.
  std::vector<std::string> mpirun(const std::vector<std::string>& program) const;
  // The command line that runs `command` on `host` alone.
  static std::vector<std::string> on(const Host& host, const std::vector<std::string>& command);

  // Cuts the link between the hosts (both ends down), or restores it.
  void set_link(bool up) const;

  // The pid of a process on `host` whose command line starts with `binary`; 0 when none.
  pid_t process_on(const Host& host, const std::string& binary) const;
  // How many processes still run on either host.
  int processes_left() const;

 private:
  std::string unavailable_, setup_error_;
  Host a_, b_;
  std::filesystem::path agent_;
  bool made_a_ = false, made_b_ = false;

  void make();
};

// Runs `command` with sh, its output (stdout and stderr) in `output`; returns its exit status.
int run_shell(const std::string& command, std::string* output = nullptr);

}  // namespace tunecnn::testing
