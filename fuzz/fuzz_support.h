#pragma once
// What the fuzz targets share: a temp folder made once per process (removed at exit), so a
// reader that takes a path reads the input from a file there and nothing is written elsewhere.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace tunecnn::fuzz {

inline const std::filesystem::path& temp_dir() {
  static const std::filesystem::path dir = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "tunecnn-fuzz-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    std::atexit([] { std::error_code ignored; std::filesystem::remove_all(temp_dir(), ignored); });
    return std::filesystem::path(pattern);
  }();
  return dir;
}

// Replaces `name` in temp_dir() with the bytes; returns its path.
inline std::filesystem::path write_temp(const std::string& name, std::string_view bytes) {
  const std::filesystem::path path = temp_dir() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) std::abort();  // a full disk would make every later run meaningless
  return path;
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace tunecnn::fuzz
