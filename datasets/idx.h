#pragma once
// The idx format of MNIST and Fashion-MNIST: a big-endian magic (0, 0, element type, rank), the
// dimensions, then the payload. Files may be plain or gzip-compressed; the reader looks at the
// first bytes, not the name, because mirrors often store one under the other's name.
#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

namespace tunecnn {

struct IdxArray {
  std::vector<std::int64_t> dims;
  std::vector<std::uint8_t> data;  // row-major, shape dims
};

// What the caller expects, so a wrong file is reported in the caller's words.
struct IdxSpec {
  int rank;                   // 3 for images, 1 for labels
  std::string_view contents;  // "images"
  std::string_view element;   // "pixels"
};

// Reads an unsigned-byte idx file whole; throws Error naming the file and the problem.
IdxArray read_idx(const std::filesystem::path& path, const IdxSpec& spec);

}  // namespace tunecnn
