// Times reading every member of the CIFAR-10 archive with our reader and with libarchive.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "datasets/tar_gz.h"

namespace tunecnn::issue32 {
TarMembers read_tar_gz_libarchive(const std::filesystem::path&,
                                  const std::function<bool(std::string_view)>&);
TarMembers read_tar_gz_libarchive_tar_only(const std::filesystem::path&,
                                           const std::function<bool(std::string_view)>&);
}  // namespace tunecnn::issue32

int main(int argc, char** argv) {
  using namespace tunecnn;
  const std::filesystem::path archive = argc > 1 ? argv[1] : "/work/shared/data/cifar-10-binary.tar.gz";
  const int reps = argc > 2 ? std::stoi(argv[2]) : 7;
  auto all = [](std::string_view) { return true; };
  using Reader = TarMembers (*)(const std::filesystem::path&, const std::function<bool(std::string_view)>&);
  const std::pair<const char*, Reader> readers[] = {
      {"ours (tar_gz.cpp + GzipReader)", &read_tar_gz},
      {"libarchive (gzip filter + tar)", &issue32::read_tar_gz_libarchive},
      {"libarchive tar over GzipReader", &issue32::read_tar_gz_libarchive_tar_only}};
  std::vector<std::vector<double>> seconds(std::size(readers));
  TarMembers reference;
  for (int rep = 0; rep < reps; ++rep)
    for (std::size_t r = 0; r < std::size(readers); ++r) {
      const auto start = std::chrono::steady_clock::now();
      TarMembers members = readers[r].second(archive, all);
      seconds[r].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      if (rep == 0 && r == 0) reference = std::move(members);
      else if (rep == 0 && members != reference) std::printf("%s: DIFFERENT MEMBERS\n", readers[r].first);
    }
  std::size_t bytes = 0;
  for (auto& [n, b] : reference) bytes += b.size();
  std::printf("%s: %zu members, %zu bytes; %d repetitions, interleaved\n", archive.c_str(),
              reference.size(), bytes, reps);
  double base = 0;
  for (std::size_t r = 0; r < std::size(readers); ++r) {
    std::sort(seconds[r].begin(), seconds[r].end());
    const double median = seconds[r][seconds[r].size() / 2];
    if (r == 0) base = median;
    std::printf("%-34s median %.3f s (min %.3f, max %.3f), %.0f MB/s, %.2fx ours\n", readers[r].first,
                median, seconds[r].front(), seconds[r].back(), bytes / median / 1e6, median / base);
  }
}
