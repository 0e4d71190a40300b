#pragma once
// A small reader for gzip-compressed tar archives (.tar.gz, .tgz), enough for data sets shipped
// that way (CIFAR-10's binary version): POSIX ustar and GNU tar headers, regular files only.
// The archive is decompressed in one streaming pass and only the wanted members are kept.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tunecnn {

// Member name (as stored: "cifar-10-batches-bin/data_batch_1.bin") -> its bytes.
using TarMembers = std::map<std::string, std::vector<std::uint8_t>, std::less<>>;

// Returns the regular-file members for which wanted(name) is true; directories, links and other
// entries are skipped. Long names are joined from the ustar prefix field or taken from a GNU
// long-name entry. Throws Error naming the archive (and the member, where there is one) when the
// file is not gzip, the gzip stream is corrupt or truncated (zlib checks the CRC at the end), a
// header's checksum or size field is wrong, or a member is shorter than its header says.
TarMembers read_tar_gz(const std::filesystem::path& archive,
                       const std::function<bool(std::string_view member)>& wanted);

}  // namespace tunecnn
