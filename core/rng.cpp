#include "core/rng.h"

#include <sstream>

#include "core/error.h"

namespace tunecnn {

double Rng::uniform(double low, double high) {
  return std::uniform_real_distribution<double>(low, high)(engine_);
}

double Rng::normal(double mean, double stddev) {
  return std::normal_distribution<double>(mean, stddev)(engine_);
}

std::string Rng::state() const {
  std::ostringstream out;
  out << engine_;
  return out.str();
}

void Rng::set_state(const std::string& text) {
  std::istringstream in(text);
  std::mt19937_64 restored;
  in >> restored;
  TUNECNN_CHECK(!in.fail(), "corrupt random-number-generator state");
  engine_ = restored;
}

}  // namespace tunecnn
