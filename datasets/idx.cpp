// Reads idx files (plain or gzip) in a few bulk reads and checks every field, so a damaged
// download fails at load time with the file and the problem named, not as a wrong accuracy later.
#include "datasets/idx.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "core/error.h"
#include "core/types.h"
#include "datasets/gzip_reader.h"

namespace tunecnn {
namespace {

constexpr std::uint8_t kUnsignedByte = 0x08;
// Bounded chunks keep a corrupt header that claims terabytes from allocating them up front.
constexpr std::size_t kChunkBytes = std::size_t{16} << 20;
constexpr std::int64_t kMaxPayloadBytes = std::int64_t{1} << 40;

std::string hex32(std::uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08X", value);
  return text;
}

std::string_view element_type_name(std::uint8_t type) {
  switch (type) {
    case 0x08:
      return "unsigned byte";
    case 0x09:
      return "signed byte";
    case 0x0B:
      return "int16";
    case 0x0C:
      return "int32";
    case 0x0D:
      return "float32";
    case 0x0E:
      return "float64";
    default:
      return {};
  }
}

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to n bytes; returns fewer only at the end of the data.
  virtual std::size_t read(std::uint8_t* dst, std::size_t n) = 0;
};

class PlainSource final : public ByteSource {
 public:
  explicit PlainSource(const std::filesystem::path& path)
      : name_(path.string()), file_(std::fopen(path.c_str(), "rb"), &std::fclose) {
    TUNECNN_CHECK(file_ != nullptr, name_, ": cannot open for reading: ", std::strerror(errno));
  }

  std::size_t read(std::uint8_t* dst, std::size_t n) override {
    const std::size_t got = std::fread(dst, 1, n, file_.get());
    TUNECNN_CHECK(!std::ferror(file_.get()), name_, ": read error: ", std::strerror(errno));
    return got;
  }

 private:
  std::string name_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_;
};

class GzipSource final : public ByteSource {
 public:
  explicit GzipSource(const std::filesystem::path& path) : reader_(path) {}
  std::size_t read(std::uint8_t* dst, std::size_t n) override { return reader_.read(dst, n); }

 private:
  GzipReader reader_;
};

std::unique_ptr<ByteSource> open_source(const std::filesystem::path& path) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  TUNECNN_CHECK(std::filesystem::exists(status), path.string(), ": file not found");
  TUNECNN_CHECK(std::filesystem::is_regular_file(status), path.string(), ": not a regular file");
  if (has_gzip_magic(path)) return std::make_unique<GzipSource>(path);
  return std::make_unique<PlainSource>(path);
}

std::uint32_t big_endian32(const std::uint8_t* bytes) {
  return (std::uint32_t{bytes[0]} << 24) | (std::uint32_t{bytes[1]} << 16) |
         (std::uint32_t{bytes[2]} << 8) | std::uint32_t{bytes[3]};
}

void check_magic(const std::string& name, std::uint32_t magic, const IdxSpec& spec) {
  const std::uint32_t expected =
      (std::uint32_t{kUnsignedByte} << 8) | static_cast<std::uint32_t>(spec.rank);
  if (magic == expected) return;
  const auto type = static_cast<std::uint8_t>(magic >> 8);
  const std::string_view type_name = element_type_name(type);
  if ((magic >> 16) == 0 && !type_name.empty() && type != kUnsignedByte)
    TUNECNN_FAIL(name, ": unsupported element type ", hex32(type), " (", type_name, ") in magic ",
                 hex32(magic), "; only unsigned bytes (0x08) are supported");
  TUNECNN_FAIL(name, ": wrong magic ", hex32(magic), ", expected ", hex32(expected), " for ",
               spec.contents, " (not an idx file of unsigned bytes with ", spec.rank,
               " dimensions)");
}

std::vector<std::int64_t> read_dims(ByteSource& source, const std::string& name,
                                    const IdxSpec& spec) {
  std::vector<std::uint8_t> header(4 * static_cast<std::size_t>(spec.rank));
  const std::size_t got = source.read(header.data(), header.size());
  TUNECNN_CHECK(got == header.size(), name, ": truncated header: expected ", spec.rank,
                " dimensions (", header.size(), " bytes), found ", got, " bytes");
  std::vector<std::int64_t> dims(spec.rank);
  for (int i = 0; i < spec.rank; ++i) dims[i] = big_endian32(header.data() + 4 * i);
  return dims;
}

std::int64_t payload_bytes(const std::string& name, const std::vector<std::int64_t>& dims) {
  std::int64_t total = 1;
  for (std::int64_t d : dims) {
    TUNECNN_CHECK(d == 0 || total <= kMaxPayloadBytes / d, name, ": implausible dimensions ",
                  shape_str(dims));
    total *= d;
  }
  return total;
}

std::vector<std::uint8_t> read_payload(ByteSource& source, std::int64_t expected) {
  // Grown a chunk at a time, never reserved from the header: a few bytes that claim a terabyte
  // must fail at the end of the data, not first take memory for it.
  std::vector<std::uint8_t> data;
  data.reserve(static_cast<std::size_t>(std::min<std::int64_t>(expected, kChunkBytes)));
  while (static_cast<std::int64_t>(data.size()) < expected) {
    const std::size_t old = data.size();
    const auto want = std::min<std::size_t>(kChunkBytes, static_cast<std::size_t>(expected) - old);
    data.resize(old + want);
    const std::size_t got = source.read(data.data() + old, want);
    data.resize(old + got);
    if (got < want) break;
  }
  return data;
}

// Reading to the end also makes zlib verify the last gzip trailer's CRC and length.
std::size_t count_remaining(ByteSource& source) {
  std::vector<std::uint8_t> scratch(1 << 16);
  std::size_t total = 0;
  for (std::size_t got; (got = source.read(scratch.data(), scratch.size())) > 0;) total += got;
  return total;
}

}  // namespace

IdxArray read_idx(const std::filesystem::path& path, const IdxSpec& spec) {
  const std::string name = path.string();
  auto source = open_source(path);
  std::array<std::uint8_t, 4> magic{};
  const std::size_t got = source->read(magic.data(), magic.size());
  TUNECNN_CHECK(got == magic.size(), name, ": truncated header: expected a 4-byte magic, found ",
                got, " bytes");
  check_magic(name, big_endian32(magic.data()), spec);
  IdxArray array;
  array.dims = read_dims(*source, name, spec);
  const std::int64_t expected = payload_bytes(name, array.dims);
  array.data = read_payload(*source, expected);
  TUNECNN_CHECK(static_cast<std::int64_t>(array.data.size()) == expected, name,
                ": truncated file: expected ", expected, " bytes of ", spec.element, " for ",
                spec.contents, " ", shape_str(array.dims), ", found ", array.data.size());
  const std::size_t extra = count_remaining(*source);
  TUNECNN_CHECK(extra == 0, name, ": trailing garbage: ", extra, " bytes after the ", expected,
                " bytes of ", spec.element);
  return array;
}

}  // namespace tunecnn
