// Damaged archives through each reader: what each one says.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "datasets/tar_gz.h"

namespace tunecnn::issue32 {
TarMembers read_tar_gz_libarchive(const std::filesystem::path&,
                                  const std::function<bool(std::string_view)>&);
TarMembers read_tar_gz_libarchive_tar_only(const std::filesystem::path&,
                                           const std::function<bool(std::string_view)>&);
}  // namespace tunecnn::issue32

using Bytes = std::vector<unsigned char>;
Bytes read(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}
void write(const std::string& p, const Bytes& b) {
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), b.size());
}
void sh(const std::string& c) {
  if (std::system(c.c_str())) std::exit(1);
}

int main() {
  using namespace tunecnn;
  const std::string d = "/tmp/issue32-errors";
  sh("rm -rf " + d + " && mkdir -p " + d + "/tree && head -c 3073 /dev/urandom > " + d +
     "/tree/short.bin && head -c 300000 /dev/urandom > " + d + "/tree/big.bin");
  sh("tar -cf " + d + "/plain.tar -C " + d + " tree/short.bin");
  sh("tar -czf " + d + "/good.tar.gz -C " + d + " tree");
  const Bytes tar = read(d + "/plain.tar"), good = read(d + "/good.tar.gz");
  auto gz = [&](const Bytes& b, const std::string& name) {
    write(d + "/x.tar", b);
    sh("gzip -c " + d + "/x.tar > " + d + "/" + name);
  };
  gz(Bytes(tar.begin(), tar.begin() + 1512), "member_short.tar.gz");
  gz(Bytes(tar.begin(), tar.begin() + 300), "header_short.tar.gz");
  Bytes flipped = tar;
  flipped[5] ^= 1;
  gz(flipped, "checksum.tar.gz");
  write(d + "/half.tar.gz", Bytes(good.begin(), good.begin() + good.size() / 2));
  Bytes garbage = good;
  for (std::size_t i = good.size() / 2; i < good.size() / 2 + 64; ++i) garbage[i] = (i * 101 + 7) & 255;
  write(d + "/garbage.tar.gz", garbage);
  write(d + "/trailer_cut.tar.gz", Bytes(good.begin(), good.end() - 4));
  Bytes crc = good;
  crc[crc.size() - 8] ^= 0xff;  // the CRC32 in the gzip trailer
  write(d + "/crc_wrong.tar.gz", crc);
  Bytes length = good;
  length[length.size() - 1] ^= 0x01;  // ISIZE
  write(d + "/isize_wrong.tar.gz", length);
  write(d + "/not_gzip.tar.gz", tar);
  // A second tar header damaged (checksum) after a good member.
  sh("tar -cf " + d + "/two.tar -C " + d + " tree/short.bin tree/big.bin");
  Bytes two = read(d + "/two.tar");
  two[512 + 3584 + 5] ^= 1;  // second header's name
  gz(two, "second_checksum.tar.gz");
  using Reader = TarMembers (*)(const std::filesystem::path&, const std::function<bool(std::string_view)>&);
  const std::pair<const char*, Reader> readers[] = {
      {"ours", &read_tar_gz},
      {"libarchive", &issue32::read_tar_gz_libarchive},
      {"libarchive tar/GzipReader", &issue32::read_tar_gz_libarchive_tar_only}};
  for (const char* name : {"member_short", "header_short", "checksum", "second_checksum", "half",
                           "garbage", "trailer_cut", "crc_wrong", "isize_wrong", "not_gzip"}) {
    const std::string path = d + "/" + name + ".tar.gz";
    std::printf("== %s\n", name);
    for (const auto& [label, reader] : readers) {
      for (bool want : {true, false}) {
        try {
          const TarMembers m = reader(path, [&](std::string_view) { return want; });
          std::printf("  %-26s %s: NO ERROR, %zu members\n", label, want ? "keep" : "skip", m.size());
        } catch (const std::exception& e) {
          std::printf("  %-26s %s: %s\n", label, want ? "keep" : "skip", e.what());
        }
      }
    }
  }
}
