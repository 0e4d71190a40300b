#include "ops/vocabulary.h"

namespace tunecnn {

std::string_view to_string(Direction dir) {
  switch (dir) {
    case Direction::fwd: return "fwd";
    case Direction::bwd_data: return "bwd_data";
    case Direction::bwd_weights: return "bwd_weights";
  }
  return "?";
}

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
