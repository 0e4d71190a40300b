#include "core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace tunecnn {
namespace {
std::string errno_text() { return std::strerror(errno); }
}  // namespace

AtomicFileWriter::AtomicFileWriter(std::filesystem::path target) : target_(std::move(target)) {
  temp_ = target_;
  temp_ += ".tmp." + std::to_string(::getpid());
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  TUNECNN_CHECK(fd_ >= 0, "cannot create ", temp_.string(), " to write ", target_.string(), ": ",
                errno_text());
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_.c_str());
}

void AtomicFileWriter::write(const void* data, std::size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd_, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    TUNECNN_CHECK(n > 0, "writing ", target_.string(), " failed: ", errno_text(),
                  " (the previous file, if any, is unchanged)");
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
}

void AtomicFileWriter::commit() {
  TUNECNN_CHECK(::fsync(fd_) == 0, "flushing ", target_.string(), " failed: ", errno_text(),
                " (the previous file, if any, is unchanged)");
  const int fd = fd_;
  fd_ = -1;
  TUNECNN_CHECK(::close(fd) == 0, "closing ", temp_.string(), " failed: ", errno_text());
  TUNECNN_CHECK(::rename(temp_.c_str(), target_.c_str()) == 0, "replacing ", target_.string(),
                " failed: ", errno_text());
  committed_ = true;
  // The rename itself must reach the disk, or a power cut could bring the old file back.
  const std::filesystem::path folder = target_.has_parent_path() ? target_.parent_path() : ".";
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

void write_file_atomically(const std::filesystem::path& target, std::string_view contents) {
  AtomicFileWriter writer(target);
  writer.write(contents.data(), contents.size());
  writer.commit();
}

}  // namespace tunecnn
