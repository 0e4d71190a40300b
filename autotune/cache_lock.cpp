#include "autotune/cache_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/error.h"

namespace tunecnn {
namespace fs = std::filesystem;
namespace {

// An owner file this old was left by a writer that died on another host (or hung): a writer
// holds the lock only for one read-modify-write of the file.
constexpr double kStaleSeconds = 60;

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

double seconds_since_epoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

fs::path lock_folder(const fs::path& cache_path) {
  return cache_path.has_parent_path() ? cache_path.parent_path() : fs::path(".");
}

void flock_exclusive(int fd, const fs::path& lock_path) {
  int rc;
  do rc = ::flock(fd, LOCK_EX);
  while (rc != 0 && errno == EINTR);
  if (rc != 0) TUNECNN_FAIL("cannot lock ", lock_path.string(), ": ", std::strerror(errno));
}

// Whether the owner file names a process of this host that is gone, or is older than
// kStaleSeconds; unreadable (being written, or just removed) is not stale.
bool stale_owner(const fs::path& owner) {
  struct stat st {};
  if (::stat(owner.c_str(), &st) != 0) return false;
  if (seconds_since_epoch() - static_cast<double>(st.st_mtime) > kStaleSeconds) return true;
  std::ifstream in(owner);
  std::string host;
  long pid = 0;
  if (!(in >> host >> pid) || host != host_name() || pid <= 0) return false;
  return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

// Moves a stale owner file out of the way under a name of our own before removing it, so that
// of several waiters breaking it at once only one succeeds (rename is atomic) and none removes
// a fresh owner file created in between by another.
void break_lock(const fs::path& owner) {
  const fs::path broken = owner.string() + ".broken-" + host_name() + "-" + std::to_string(::getpid());
  if (::rename(owner.c_str(), broken.c_str()) == 0) ::unlink(broken.c_str());
}

std::string owner_text(const fs::path& owner) {
  std::ifstream in(owner);
  std::string text;
  std::getline(in, text);
  return text.empty() ? "an unknown process" : "'" + text + "' (host pid unix-time)";
}

}  // namespace

CacheLockScheme lock_scheme_for_fs_type(long fs_type) {
  return network_fs_name(fs_type).empty() ? CacheLockScheme::flock : CacheLockScheme::exclusive_file;
}

std::string network_fs_name(long fs_type) {
  switch (static_cast<unsigned long>(fs_type) & 0xFFFFFFFFUL) {
    case 0x6969UL: return "nfs";
    case 0x517BUL: return "smb";
    case 0xFF534D42UL: return "cifs";
    case 0xFE534D42UL: return "smb2";
    case 0x65735546UL: return "fuse";
    case 0x01021997UL: return "9p";
    default: return "";
  }
}

CacheLockChoice cache_lock_choice(const fs::path& cache_path) {
  if (const char* forced = std::getenv("TUNECNN_CACHE_LOCK"); forced != nullptr && *forced != '\0') {
    const std::string value = forced;
    if (value == "flock") return {CacheLockScheme::flock, ""};
    if (value == "exclusive-file") return {CacheLockScheme::exclusive_file, "TUNECNN_CACHE_LOCK=exclusive-file"};
    TUNECNN_FAIL("TUNECNN_CACHE_LOCK must be flock or exclusive-file, got '", value, "'");
  }
  struct statfs fs_info {};
  if (::statfs(lock_folder(cache_path).c_str(), &fs_info) != 0) return {};
  const std::string name = network_fs_name(static_cast<long>(fs_info.f_type));
  if (name.empty()) return {};
  return {CacheLockScheme::exclusive_file, "the cache is on " + name + ", where flock may not lock across hosts"};
}

CacheLock::CacheLock(const fs::path& cache_path, double max_wait_seconds) {
  if (cache_lock_choice(cache_path).scheme == CacheLockScheme::flock) {
    // PATH.lock is never removed: deleting it would let two processes lock two different inodes.
    const fs::path lock_path = cache_path.string() + ".lock";
    fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    TUNECNN_CHECK(fd_ >= 0, "cannot open the lock file ", lock_path.string(), ": ", std::strerror(errno));
    try {
      flock_exclusive(fd_, lock_path);
    } catch (...) {
      ::close(fd_);
      throw;
    }
    return;
  }
  const fs::path owner = cache_path.string() + ".lock.owner";
  const double start = seconds_since_epoch();
  for (int attempt = 0;; ++attempt) {
    const int fd = ::open(owner.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      std::ostringstream text;
      text << host_name() << " " << ::getpid() << " " << static_cast<long>(seconds_since_epoch()) << "\n";
      const std::string bytes = text.str();
      const bool written = ::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
      ::close(fd);
      owner_file_ = owner;
      if (!written) TUNECNN_FAIL("cannot write the lock file ", owner.string(), ": ", std::strerror(errno));
      return;
    }
    TUNECNN_CHECK(errno == EEXIST, "cannot create the lock file ", owner.string(), ": ", std::strerror(errno));
    if (stale_owner(owner)) {
      break_lock(owner);
      continue;
    }
    TUNECNN_CHECK(seconds_since_epoch() - start < max_wait_seconds, "the tuning cache lock ", owner.string(),
                  " has been held by ", owner_text(owner), " for over ", max_wait_seconds,
                  " s; if that process is gone, remove the file");
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + attempt % 20));
  }
}

CacheLock::~CacheLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
  if (!owner_file_.empty()) ::unlink(owner_file_.c_str());
}

}  // namespace tunecnn
