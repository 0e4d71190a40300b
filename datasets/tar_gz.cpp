// Streams a .tar.gz through zlib's inflate and walks the tar headers as they come out, so a
// 180 MB archive is held in memory only as the members the caller keeps.
#include "datasets/tar_gz.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "core/error.h"
#include "datasets/gzip_reader.h"

namespace tunecnn {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kBlockBytes = 512;
using Block = std::array<std::uint8_t, kBlockBytes>;
// Members grow in bounded chunks, so a header that claims gigabytes in a truncated archive fails
// at the end of the data instead of allocating them first.
constexpr std::size_t kChunkBytes = std::size_t{16} << 20;

std::string_view field(const Block& block, std::size_t offset, std::size_t length) {
  const auto* begin = reinterpret_cast<const char*>(block.data() + offset);
  return {begin, static_cast<std::size_t>(std::find(begin, begin + length, '\0') - begin)};
}

// Octal digits, optionally surrounded by spaces, as tar writes numbers; -1 for anything else.
std::int64_t parse_octal(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  if (text.empty() || text.size() > 21) return -1;
  std::int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '7') return -1;
    value = value * 8 + (c - '0');
  }
  return value;
}

class TarReader {
 public:
  TarReader(const fs::path& archive, const std::function<bool(std::string_view)>& wanted)
      : name_(archive.string()), wanted_(wanted), in_(archive) {}

  TarMembers read() {
    TarMembers members;
    Block header;
    std::string long_name;  // from a GNU 'L' or pax 'x' entry, for the entry that follows
    while (read_header(header)) {
      const std::string name = long_name.empty() ? header_name(header) : std::move(long_name);
      long_name.clear();
      const std::int64_t size = member_size(header, name);
      const char type = static_cast<char>(header[156]);
      if (type == 'L') {
        long_name = as_text(read_member(name, size));
      } else if (type == 'x') {
        long_name = pax_path(read_member(name, size));
      } else if ((type == '0' || type == '\0' || type == '7') && wanted_(name)) {
        members[name] = read_member(name, size);
      } else {
        skip_member(name, size);
      }
    }
    drain();
    return members;
  }

 private:
  std::string name_;
  const std::function<bool(std::string_view)>& wanted_;
  GzipReader in_;
  std::vector<std::uint8_t> scratch_ = std::vector<std::uint8_t>(1 << 16);

  // False at the end of the archive: a zero block, or the data ending cleanly between entries.
  bool read_header(Block& header) {
    const std::uint64_t offset = in_.delivered();
    const std::size_t got = in_.read(header.data(), header.size());
    if (got == 0) return false;
    TUNECNN_CHECK(got == header.size(), name_, ": truncated tar archive: it ends inside the ",
                  "header at byte ", offset, " (", got, " of 512 bytes)");
    if (std::all_of(header.begin(), header.end(), [](std::uint8_t b) { return b == 0; }))
      return false;
    check_checksum(header, offset);
    return true;
  }

  // The sum of the header's bytes with the checksum field read as spaces; old tars summed
  // signed chars, so either sum is accepted.
  void check_checksum(const Block& header, std::uint64_t offset) const {
    std::int64_t unsigned_sum = 0, signed_sum = 0;
    for (std::size_t i = 0; i < header.size(); ++i) {
      const bool in_field = i >= 148 && i < 156;
      unsigned_sum += in_field ? ' ' : header[i];
      signed_sum += in_field ? ' ' : static_cast<signed char>(header[i]);
    }
    const std::int64_t stored = parse_octal(field(header, 148, 8));
    TUNECNN_CHECK(stored == unsigned_sum || stored == signed_sum, name_,
                  ": corrupt tar header at byte ", offset, " (member '", header_name(header),
                  "'): checksum field says ", stored, ", the header sums to ", unsigned_sum,
                  "; the archive is damaged or not a tar file");
  }

  // POSIX ustar splits long paths into prefix/name; GNU tar's magic ("ustar  ") uses the
  // prefix bytes for other fields, so only the POSIX magic ("ustar\0") has a prefix.
  static std::string header_name(const Block& header) {
    const std::string name(field(header, 0, 100));
    const bool posix = std::memcmp(header.data() + 257, "ustar\0", 6) == 0;
    const std::string_view prefix = posix ? field(header, 345, 155) : std::string_view{};
    return prefix.empty() ? name : std::string(prefix) + "/" + name;
  }

  std::int64_t member_size(const Block& header, const std::string& name) const {
    TUNECNN_CHECK((header[124] & 0x80) == 0, name_, ": member '", name,
                  "' has a base-256 size field (over 8 GiB), which this reader does not support");
    const std::int64_t size = parse_octal(field(header, 124, 12));
    TUNECNN_CHECK(size >= 0, name_, ": member '", name, "' has a malformed size field '",
                  field(header, 124, 12), "'; the archive is damaged");
    return size;
  }

  // Reads the member's data and the padding to the next 512-byte block.
  std::vector<std::uint8_t> read_member(const std::string& name, std::int64_t size) {
    std::vector<std::uint8_t> data;
    const auto total = static_cast<std::size_t>(size);
    data.reserve(std::min(total, kChunkBytes));
    while (data.size() < total) {
      const std::size_t old = data.size();
      const std::size_t want = std::min(kChunkBytes, total - old);
      data.resize(old + want);
      const std::size_t got = in_.read(data.data() + old, want);
      if (got < want) fail_short(name, size, old + got);
    }
    skip_padding(name, size);
    return data;
  }

  void skip_member(const std::string& name, std::int64_t size) {
    for (std::int64_t done = 0; done < size;) {
      const auto want = static_cast<std::size_t>(
          std::min<std::int64_t>(size - done, static_cast<std::int64_t>(scratch_.size())));
      const std::size_t got = in_.read(scratch_.data(), want);
      if (got < want) fail_short(name, size, static_cast<std::uint64_t>(done) + got);
      done += static_cast<std::int64_t>(got);
    }
    skip_padding(name, size);
  }

  void skip_padding(const std::string& name, std::int64_t size) {
    const std::size_t padding =
        (kBlockBytes - static_cast<std::size_t>(size) % kBlockBytes) % kBlockBytes;
    const std::size_t got = in_.read(scratch_.data(), padding);
    TUNECNN_CHECK(got == padding, name_, ": truncated tar archive: it ends inside the padding ",
                  "after member '", name, "'");
  }

  [[noreturn]] void fail_short(const std::string& name, std::int64_t size,
                               std::uint64_t got) const {
    TUNECNN_FAIL(name_, ": truncated tar archive: member '", name,
                 "' is shorter than its header "
                 "says (",
                 size, " bytes in the header, the archive ends after ", got, ")");
  }

  // Reading to the end makes zlib check the CRC and length in the gzip trailer.
  void drain() {
    while (in_.read(scratch_.data(), scratch_.size()) > 0) {
    }
  }

  static std::string as_text(const std::vector<std::uint8_t>& bytes) {
    std::string text(bytes.begin(), bytes.end());
    return text.substr(0, text.find('\0'));
  }

  // A pax header is records "LENGTH key=value\n"; only the path matters here.
  static std::string pax_path(const std::vector<std::uint8_t>& bytes) {
    const std::string text(bytes.begin(), bytes.end());
    for (std::size_t at = 0; at < text.size();) {
      const std::size_t space = text.find(' ', at);
      const std::int64_t length = std::atoll(text.c_str() + at);
      if (space == std::string::npos || length <= 0) break;
      const std::string record = text.substr(space + 1, at + length - space - 2);
      if (record.rfind("path=", 0) == 0) return record.substr(5);
      at += static_cast<std::size_t>(length);
    }
    return {};
  }
};

}  // namespace

TarMembers read_tar_gz(const fs::path& archive,
                       const std::function<bool(std::string_view member)>& wanted) {
  std::error_code error;
  const auto status = fs::status(archive, error);
  TUNECNN_CHECK(fs::exists(status), archive.string(), ": file not found");
  TUNECNN_CHECK(fs::is_regular_file(status), archive.string(), ": not a regular file");
  TUNECNN_CHECK(has_gzip_magic(archive), archive.string(),
                ": not a gzip file (it does not start with the bytes 1f 8b); expected a .tar.gz "
                "archive");
  return TarReader(archive, wanted).read();
}

}  // namespace tunecnn
