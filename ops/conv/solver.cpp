#include "ops/conv/solver.h"

namespace tunecnn {

int TuneConfig::get(std::string_view name, int fallback) const {
  for (const auto& [key, value] : values)
    if (key == name) return value;
  return fallback;
}

std::string TuneConfig::str() const {
  std::string out;
  for (const auto& [key, value] : values) {
    if (!out.empty()) out += ",";
    out += key + "=" + std::to_string(value);
  }
  return out;
}

}  // namespace tunecnn
