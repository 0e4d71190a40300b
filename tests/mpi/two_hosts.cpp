#include "tests/mpi/two_hosts.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "tests/mpi/job.h"

namespace tunecnn::testing {
namespace fs = std::filesystem;

namespace {

// The addresses exist only inside the two namespaces, so concurrent runs (each with its own
// namespaces) never clash over them and one subnet serves all.
constexpr const char* kSubnet = "10.231.0.0/24";

void write_script(const fs::path& path, const std::string& text) {
  std::ofstream(path) << "#!/bin/sh\n" << text;
  fs::permissions(path, fs::perms::owner_all);
}

// Whether `pid` runs in the network namespace bound at /run/netns/NAME (a zombie has left every
// namespace and is no one's).
bool in_namespace(const std::string& pid, const struct stat& ns) {
  struct stat mine {};
  if (stat(("/proc/" + pid + "/ns/net").c_str(), &mine) != 0) return false;
  return mine.st_dev == ns.st_dev && mine.st_ino == ns.st_ino;
}

// The pids of the processes in namespace `name` whose command line starts with `binary` (every
// process for "").
std::vector<pid_t> pids_in(const std::string& name, const std::string& binary = "") {
  std::vector<pid_t> pids;
  struct stat ns {};
  if (stat(("/run/netns/" + name).c_str(), &ns) != 0) return pids;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string pid = entry.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos || !in_namespace(pid, ns)) continue;
    if (read_text_file(entry.path() / "cmdline").find(binary) != 0) continue;
    pids.push_back(std::stoi(pid));
  }
  return pids;
}

}  // namespace

int run_shell(const std::string& command, std::string* output) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  std::string text;
  char buffer[4096];
  for (std::size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) text.append(buffer, n);
  const int status = pclose(pipe);
  if (output != nullptr) *output = text;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TwoHosts::TwoHosts(const fs::path& dir) {
  const std::string id = std::to_string(getpid());  // one test run's names, apart from another's
  a_ = {"tcnnA" + id, "10.231.0.1", "tcnA" + id, dir / "hostA" / "enter", dir / "hostA" / "tuning.yaml"};
  b_ = {"tcnnB" + id, "10.231.0.2", "tcnB" + id, dir / "hostB" / "enter", dir / "hostB" / "tuning.yaml"};
  agent_ = dir / "agent";
  make();
}

void TwoHosts::make() {
  if (geteuid() != 0) {
    unavailable_ = "making network namespaces needs root";
    return;
  }
  std::string output;
  if (run_shell("command -v ip && command -v unshare", &output) != 0) {
    unavailable_ = "needs ip (iproute2) and unshare (util-linux)";
    return;
  }
  for (auto [host, made] : {std::pair{&a_, &made_a_}, std::pair{&b_, &made_b_}}) {
    if (run_shell("ip netns add " + host->name, &output) != 0) {
      unavailable_ = "ip netns add failed (no CAP_SYS_ADMIN, e.g. in a container?): " + output;
      return;
    }
    *made = true;
  }
  const std::string steps[] = {
      "ip link add " + a_.link + " netns " + a_.name + " type veth peer name " + b_.link + " netns " + b_.name,
      "ip -n " + a_.name + " addr add " + a_.address + "/24 dev " + a_.link,
      "ip -n " + b_.name + " addr add " + b_.address + "/24 dev " + b_.link,
      "ip -n " + a_.name + " link set lo up",
      "ip -n " + b_.name + " link set lo up",
  };
  for (const std::string& step : steps)
    if (run_shell(step, &output) != 0) {
      setup_error_ = step + ": " + output;
      return;
    }
  set_link(true);

  // Each host's processes: its namespace, its own host name (OpenMPI and tunecnn tell hosts
  // apart by it), its own tuning cache, and permission for mpirun to run as root.
  for (const Host* host : {&a_, &b_}) {
    fs::create_directories(host->enter.parent_path());
    write_script(host->enter,
                 "# Runs its arguments on host " + host->name + ".\n"
                 "exec ip netns exec " + host->name + " unshare --uts sh -c 'hostname \"$0\" && exec \"$@\"' " +
                     host->name + " env TUNECNN_TUNE_CACHE=" + host->tune_cache.string() +
                     " TUNECNN_SYSTEM_TUNE_CACHE=" + (host->enter.parent_path() / "system.yaml").string() +
                     " OMP_WAIT_POLICY=PASSIVE OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \"$@\"\n");
  }
  // mpirun calls its agent as it would call ssh: HOST COMMAND, the command being one shell line.
  write_script(agent_, "host=$1\nshift\ncase $host in\n"
                       "  " + a_.address + ") exec " + a_.enter.string() + " sh -c \"$*\" ;;\n"
                       "  " + b_.address + ") exec " + b_.enter.string() + " sh -c \"$*\" ;;\n"
                       "esac\necho \"no such host: $host\" >&2\nexit 255\n");
}

TwoHosts::~TwoHosts() {
  // Processes first: a namespace (and the veth pair in it) lives on while a process is in it.
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  for (int left = processes_left(); left > 0 && Clock::now() < deadline; left = processes_left()) {
    for (const Host* host : {&a_, &b_})
      for (pid_t pid : pids_in(host->name)) kill(pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (made_a_) run_shell("ip netns delete " + a_.name);
  if (made_b_) run_shell("ip netns delete " + b_.name);
}

std::vector<std::string> TwoHosts::mpirun(const std::vector<std::string>& program) const {
  std::vector<std::string> args = {
      a_.enter.string(), TUNECNN_MPIEXEC, "-np", "2", "--host", a_.address + ":1," + b_.address + ":1",
      // Each "host" is this machine: bound to cores, both ranks would share the first one.
      "--bind-to", "none", "--mca", "plm_rsh_agent", agent_.string(),
      // TCP over the veth pair, nothing else (no shared memory between the hosts).
      "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", kSubnet, "--mca", "oob_tcp_if_include", kSubnet,
      // mpirun ends a job only once every host's daemon has reported its ranks stopped, so it must
      // notice a host it can no longer reach (here 1 s idle, then 2 probes 1 s apart) before any
      // rank's --collective-timeout: a rank's MPI_Abort first would leave it sending the stop to
      // that host until TCP gives up retransmitting, about 15 minutes (docs/FAULTS.md).
      "--mca", "oob_tcp_keepalive_time", "1", "--mca", "oob_tcp_keepalive_intvl", "1", "--mca", "oob_tcp_keepalive_probes", "2"};
  args.insert(args.end(), program.begin(), program.end());
  return args;
}

std::vector<std::string> TwoHosts::on(const Host& host, const std::vector<std::string>& command) {
  std::vector<std::string> args = {host.enter.string()};
  args.insert(args.end(), command.begin(), command.end());
  return args;
}

void TwoHosts::set_link(bool up) const {
  for (const Host* host : {&a_, &b_}) {
    std::string output;
    const std::string command = "ip -n " + host->name + " link set " + host->link + (up ? " up" : " down");
    EXPECT_EQ(run_shell(command, &output), 0) << command << ": " << output;
  }
}

pid_t TwoHosts::process_on(const Host& host, const std::string& binary) const {
  const std::vector<pid_t> pids = pids_in(host.name, binary);
  return pids.empty() ? 0 : pids.front();
}

int TwoHosts::processes_left() const {
  return static_cast<int>(pids_in(a_.name).size() + pids_in(b_.name).size());
}

}  // namespace tunecnn::testing
