#pragma once
// Decompressed bytes of a gzip file, for the idx and tar.gz readers. inflate is driven directly
// rather than through gzread, which accepts a file whose 8-byte trailer was cut off and so would
// skip the CRC check: here a member counts as complete only at Z_STREAM_END. Members that follow
// each other concatenate, as gzip allows.
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace tunecnn {

// True when the file starts with gzip's magic bytes 1f 8b.
bool has_gzip_magic(const std::filesystem::path& path);

class GzipReader {
 public:
  // Throws Error naming the file when it cannot be opened.
  explicit GzipReader(const std::filesystem::path& path);
  ~GzipReader();
  GzipReader(const GzipReader&) = delete;
  GzipReader& operator=(const GzipReader&) = delete;

  // Reads up to n bytes; returns fewer only at the end of the data. Throws Error naming the file
  // on corrupt data ("corrupt gzip data ...") or a file that ends inside a member ("truncated
  // gzip stream ..."), with the uncompressed offset.
  std::size_t read(std::uint8_t* dst, std::size_t n);
  std::uint64_t delivered() const { return delivered_; }  // uncompressed bytes read so far

 private:
  std::string name_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_;
  std::vector<std::uint8_t> input_;
  z_stream stream_{};
  bool member_started_ = false;
  std::uint64_t delivered_ = 0;

  bool refill();  // false at a clean end of the file
};

}  // namespace tunecnn
