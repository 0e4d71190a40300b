#include "tests/support/test_data.h"

#include <cstdlib>
#include <random>

#include "core/init.h"

namespace tunecnn::testing {

std::filesystem::path shared_data_dir() {
  if (const char* dir = std::getenv("TUNECNN_DATA_DIR")) return dir;
  return TUNECNN_DEFAULT_DATA_DIR;
}

TempDir::TempDir() {
  std::random_device entropy;
  path_ = std::filesystem::temp_directory_path() /
          ("tunecnn-test-" + std::to_string(entropy()) + std::to_string(entropy()));
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

Tensor random_tensor(const Shape& shape, Rng& rng, DType dtype, double low, double high) {
  Tensor t = Tensor::empty(shape, dtype);
  uniform_fill(t, low, high, rng);
  return t;
}

}  // namespace tunecnn::testing
