// Candidate replacements of read_tar_gz on libarchive, for issue 32's measurement.
#include <archive.h>
#include <archive_entry.h>

#include <cerrno>
#include <exception>
#include <memory>

#include "core/error.h"
#include "datasets/gzip_reader.h"
#include "datasets/tar_gz.h"

namespace tunecnn::issue32 {
namespace fs = std::filesystem;
using ArchivePtr = std::unique_ptr<archive, int (*)(archive*)>;

namespace {
void read_entries(archive* a, const std::string& name,
                  const std::function<bool(std::string_view)>& wanted, TarMembers& members,
                  const std::function<void()>& rethrow) {
  archive_entry* entry = nullptr;
  for (;;) {
    const int r = archive_read_next_header(a, &entry);
    if (r == ARCHIVE_EOF) break;
    rethrow();
    TUNECNN_CHECK(r == ARCHIVE_OK || r == ARCHIVE_WARN, name, ": bad tar archive (libarchive: ",
                  archive_error_string(a), ")");
    const std::string member = archive_entry_pathname(entry);
    if (archive_entry_filetype(entry) == AE_IFREG && wanted(member)) {
      std::vector<std::uint8_t> data(static_cast<std::size_t>(archive_entry_size(entry)));
      const la_ssize_t got = archive_read_data(a, data.data(), data.size());
      rethrow();
      TUNECNN_CHECK(got == static_cast<la_ssize_t>(data.size()), name, ": member '", member,
                    "' (libarchive: ", got < 0 ? archive_error_string(a) : "short", ")");
      members[member] = std::move(data);
    } else {
      const int s = archive_read_data_skip(a);
      rethrow();
      TUNECNN_CHECK(s == ARCHIVE_OK, name, ": member '", member, "' (libarchive: ",
                    archive_error_string(a), ")");
    }
  }
}
}  // namespace

// All libarchive: its gzip filter (which does not check the CRC) and its tar reader.
TarMembers read_tar_gz_libarchive(const fs::path& archive_path,
                                  const std::function<bool(std::string_view)>& wanted) {
  ArchivePtr a(archive_read_new(), archive_read_free);
  archive_read_support_filter_gzip(a.get());
  archive_read_support_format_tar(a.get());
  const std::string name = archive_path.string();
  TUNECNN_CHECK(archive_read_open_filename(a.get(), name.c_str(), 1 << 16) == ARCHIVE_OK, name,
                ": ", archive_error_string(a.get()));
  TarMembers members;
  read_entries(a.get(), name, wanted, members, [] {});
  return members;
}

// libarchive's tar reader over our GzipReader (zlib inflate with the CRC check).
namespace {
struct Source {
  GzipReader gz;
  std::vector<std::uint8_t> buffer = std::vector<std::uint8_t>(1 << 16);
  std::exception_ptr error;
};
la_ssize_t read_callback(archive* a, void* data, const void** block) {
  auto* source = static_cast<Source*>(data);
  try {
    *block = source->buffer.data();
    return static_cast<la_ssize_t>(source->gz.read(source->buffer.data(), source->buffer.size()));
  } catch (...) {
    source->error = std::current_exception();
    archive_set_error(a, EIO, "gzip error");
    return -1;
  }
}
}  // namespace

TarMembers read_tar_gz_libarchive_tar_only(const fs::path& archive_path,
                                           const std::function<bool(std::string_view)>& wanted) {
  const std::string name = archive_path.string();
  Source source{GzipReader(archive_path)};
  ArchivePtr a(archive_read_new(), archive_read_free);
  archive_read_support_format_tar(a.get());
  auto rethrow = [&] {
    if (source.error) std::rethrow_exception(source.error);
  };
  const int r = archive_read_open(a.get(), &source, nullptr, read_callback, nullptr);
  rethrow();
  TUNECNN_CHECK(r == ARCHIVE_OK, name, ": ", archive_error_string(a.get()));
  TarMembers members;
  read_entries(a.get(), name, wanted, members, rethrow);
  while (source.gz.read(source.buffer.data(), source.buffer.size()) > 0) {
  }
  return members;
}

}  // namespace tunecnn::issue32
