#pragma once
// The lock every writer of a tuning cache holds for its read-modify-write (and for moving a bad
// file aside). Two schemes:
//   flock           an exclusive flock on PATH.lock, where the file system honours it;
//   exclusive-file  PATH.lock.owner, created with O_EXCL and holding its owner's host, pid and
//                   time, removed on release. For NFS, SMB/CIFS, FUSE and 9p, where flock may be
//                   local to one client or emulated: O_EXCL creation is atomic on NFSv3 and
//                   later. A waiter breaks an owner file left by a dead process of this host, or
//                   one older than a minute (a writer holds it for milliseconds).
// The scheme follows the cache folder's file system (statfs); TUNECNN_CACHE_LOCK=flock or
// exclusive-file overrides that, for a file system the detection does not know.
#include <filesystem>
#include <string>

namespace tunecnn {

enum class CacheLockScheme { flock, exclusive_file };

// The scheme for a file system of statfs type `fs_type`, and its name ("nfs", ...; empty for one
// where flock is trusted).
CacheLockScheme lock_scheme_for_fs_type(long fs_type);
std::string network_fs_name(long fs_type);

struct CacheLockChoice {
  CacheLockScheme scheme = CacheLockScheme::flock;
  std::string why;  // for the user when it is not flock: "on nfs", "TUNECNN_CACHE_LOCK"
};
// The scheme for a cache at `cache_path` (its folder must exist). Throws Error for an unknown
// TUNECNN_CACHE_LOCK value.
CacheLockChoice cache_lock_choice(const std::filesystem::path& cache_path);

class CacheLock {
 public:
  // Waits for the lock on `cache_path`; throws Error naming the lock file when it cannot be
  // taken (an exclusive-file lock held by a live process for over `max_wait_seconds`).
  explicit CacheLock(const std::filesystem::path& cache_path, double max_wait_seconds = 300);
  ~CacheLock();
  CacheLock(const CacheLock&) = delete;
  CacheLock& operator=(const CacheLock&) = delete;

 private:
  int fd_ = -1;                      // flock's descriptor
  std::filesystem::path owner_file_;  // exclusive-file's, removed on release
};

}  // namespace tunecnn
