#pragma once
// Files that matter are replaced atomically: the bytes go to a temporary file beside the target,
// are flushed to disk, and are renamed over it only when complete. A failed write (a full disk,
// a crash, Ctrl-C) leaves the previous file intact, and the error names the file.
#include <filesystem>
#include <string_view>

namespace tunecnn {

class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::filesystem::path target);
  ~AtomicFileWriter();  // removes the temporary file unless commit() succeeded
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, std::size_t bytes);
  void commit();  // fsync, close, rename over the target, fsync the folder

 private:
  std::filesystem::path target_, temp_;
  int fd_ = -1;
  bool committed_ = false;
};

void write_file_atomically(const std::filesystem::path& target, std::string_view contents);

}  // namespace tunecnn
