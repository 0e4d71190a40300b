// The tuning cache's lock (autotune/cache_lock.h): network file systems get the exclusive-file
// scheme, TUNECNN_CACHE_LOCK overrides the detection, an owner file left by a dead process or
// too old is broken, a live owner makes a waiter give up with a message naming the file and the
// owner, and a release removes the owner file. (Two processes writing under each scheme:
// test_tuning_cache.cpp, TwoProcessesLoseNothing*.)
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "autotune/cache_lock.h"
#include "autotune/tuning_cache.h"
#include "core/error.h"
#include "support/expect_error.h"
#include "support/scoped_env.h"
#include "support/test_data.h"

namespace tunecnn {
namespace {

namespace fs = std::filesystem;
using testing::ScopedEnv;

std::string this_host() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

// A pid that is certainly not running: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

TEST(CacheLock, NetworkFileSystemsTakeTheExclusiveFileScheme) {
  EXPECT_EQ(lock_scheme_for_fs_type(0x6969), CacheLockScheme::exclusive_file);  // NFS
  EXPECT_EQ(network_fs_name(0x6969), "nfs");
  EXPECT_EQ(lock_scheme_for_fs_type(0xFF534D42L), CacheLockScheme::exclusive_file);  // CIFS
  EXPECT_EQ(lock_scheme_for_fs_type(0x65735546), CacheLockScheme::exclusive_file);  // FUSE
  EXPECT_EQ(lock_scheme_for_fs_type(0xEF53), CacheLockScheme::flock);       // ext4
  EXPECT_EQ(lock_scheme_for_fs_type(0x01021994), CacheLockScheme::flock);   // tmpfs
  EXPECT_EQ(lock_scheme_for_fs_type(0x58465342), CacheLockScheme::flock);   // xfs
}

TEST(CacheLock, TheEnvironmentOverridesTheDetection) {
  testing::TempDir dir;
  const fs::path cache = dir.path() / "tuning.yaml";
  {
    ScopedEnv exclusive("TUNECNN_CACHE_LOCK", "exclusive-file");
    EXPECT_EQ(cache_lock_choice(cache).scheme, CacheLockScheme::exclusive_file);
  }
  {
    ScopedEnv flock("TUNECNN_CACHE_LOCK", "flock");
    EXPECT_EQ(cache_lock_choice(cache).scheme, CacheLockScheme::flock);
  }
  ScopedEnv typo("TUNECNN_CACHE_LOCK", "nfs-safe");
  testing::expect_error([&] { cache_lock_choice(cache); }, {"TUNECNN_CACHE_LOCK", "nfs-safe", "exclusive-file"});
}

TEST(CacheLock, TheOwnerFileIsReleasedAndOneLeftByADeadProcessIsBroken) {
  ScopedEnv exclusive("TUNECNN_CACHE_LOCK", "exclusive-file");
  testing::TempDir dir;
  const fs::path cache = dir.path() / "tuning.yaml";
  const fs::path owner = cache.string() + ".lock.owner";
  {
    CacheLock lock(cache);
    EXPECT_TRUE(fs::exists(owner));
  }
  EXPECT_FALSE(fs::exists(owner));
  std::ofstream(owner) << this_host() << " " << dead_pid() << " 0\n";
  { CacheLock lock(cache, 5); }  // would wait the 5 s and fail if the dead owner were respected
  EXPECT_FALSE(fs::exists(owner));
}

TEST(CacheLock, AnOldOwnerFileIsBrokenAndALiveOneIsWaitedForThenNamed) {
  ScopedEnv exclusive("TUNECNN_CACHE_LOCK", "exclusive-file");
  testing::TempDir dir;
  const fs::path cache = dir.path() / "tuning.yaml";
  const fs::path owner = cache.string() + ".lock.owner";
  std::ofstream(owner) << "another-host 12345 0\n";  // another host's: its pid cannot be checked
  testing::expect_error([&] { CacheLock lock(cache, 0.2); },
                        {owner.string(), "another-host 12345", "remove the file"});
  EXPECT_TRUE(fs::exists(owner)) << "a live-looking owner is never broken early";
  fs::last_write_time(owner, fs::file_time_type::clock::now() - std::chrono::minutes(5));
  { CacheLock lock(cache, 5); }
  EXPECT_FALSE(fs::exists(owner));
}

TEST(CacheLock, WritingACacheUnderTheExclusiveFileLockWarnsOnceAndLeavesNoOwnerFile) {
  ScopedEnv exclusive("TUNECNN_CACHE_LOCK", "exclusive-file");
  testing::TempDir dir;
  const fs::path cache = dir.path() / "tuning.yaml";
  const LoadedTuningCache first = update_tuning_cache_file(cache, [](TuningCache&) {});
  const LoadedTuningCache second = update_tuning_cache_file(cache, [](TuningCache&) {});
  ASSERT_EQ(first.warnings.size() + second.warnings.size(), 1u) << "once per process";
  const std::string& warning = first.warnings.empty() ? second.warnings.front() : first.warnings.front();
  EXPECT_NE(warning.find(cache.string() + ".lock.owner"), std::string::npos) << warning;
  EXPECT_FALSE(fs::exists(cache.string() + ".lock.owner"));
}

}  // namespace
}  // namespace tunecnn
