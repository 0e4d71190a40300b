#include "datasets/gzip_reader.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>

#include "core/error.h"

namespace tunecnn {

bool has_gzip_magic(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::array<unsigned char, 2> head{};
  in.read(reinterpret_cast<char*>(head.data()), head.size());
  return in.gcount() == 2 && head[0] == 0x1f && head[1] == 0x8b;
}

GzipReader::GzipReader(const std::filesystem::path& path)
    : name_(path.string()), file_(std::fopen(path.c_str(), "rb"), &std::fclose), input_(1 << 18) {
  TUNECNN_CHECK(file_ != nullptr, name_, ": cannot open for reading: ", std::strerror(errno));
  const int ret = inflateInit2(&stream_, 15 + 16);  // 15-bit window, gzip wrapper only
  TUNECNN_CHECK(ret == Z_OK, name_, ": cannot start zlib: ", zError(ret));
}

GzipReader::~GzipReader() { inflateEnd(&stream_); }

std::size_t GzipReader::read(std::uint8_t* dst, std::size_t n) {
  std::size_t total = 0;
  while (total < n) {
    if (stream_.avail_in == 0 && !refill()) break;
    const auto want = static_cast<uInt>(std::min<std::size_t>(n - total, UINT_MAX));
    stream_.next_out = dst + total;
    stream_.avail_out = want;
    member_started_ = true;
    const int ret = inflate(&stream_, Z_NO_FLUSH);
    total += want - stream_.avail_out;
    if (ret == Z_STREAM_END) {
      inflateReset(&stream_);
      member_started_ = false;
    } else if (ret != Z_OK) {
      const char* message = stream_.msg != nullptr ? stream_.msg : zError(ret);
      TUNECNN_FAIL(name_, ": corrupt gzip data after ", delivered_ + total,
                   " uncompressed bytes (zlib: ", message, "); the file is damaged, download it again");
    }
  }
  delivered_ += total;
  return total;
}

bool GzipReader::refill() {
  stream_.next_in = input_.data();
  stream_.avail_in = static_cast<uInt>(std::fread(input_.data(), 1, input_.size(), file_.get()));
  TUNECNN_CHECK(!std::ferror(file_.get()), name_, ": read error: ", std::strerror(errno));
  TUNECNN_CHECK(stream_.avail_in > 0 || !member_started_, name_,
                ": truncated gzip stream (the file ends inside compressed data, after ", delivered_,
                " uncompressed bytes); the download is incomplete");
  return stream_.avail_in > 0;
}

}  // namespace tunecnn
