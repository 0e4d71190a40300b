#include "apps/bench/process_memory.h"

#include <fstream>
#include <sstream>
#include <string>

namespace tunecnn {

std::optional<std::size_t> process_status_bytes(const char* field) {
  std::ifstream status("/proc/self/status");
  const std::string wanted = std::string(field) + ":";
  for (std::string line; std::getline(status, line);) {
    std::istringstream words(line);
    std::string name, unit;
    std::size_t kib = 0;
    if (words >> name >> kib >> unit && name == wanted && unit == "kB") return kib * 1024;
  }
  return std::nullopt;
}

bool reset_peak_resident_set() {
  std::ofstream clear_refs("/proc/self/clear_refs");
  clear_refs << "5";  // proc(5): resets the peak resident set size to the current one
  clear_refs.flush();
  return static_cast<bool>(clear_refs);
}

}  // namespace tunecnn
