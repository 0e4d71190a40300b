#include "tests/support/test_data.h"

#include <cctype>
#include <cstdlib>
#include <random>

#include "core/init.h"
#include "ops/layout/reference.h"

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

std::vector<double> values(const Tensor& t) {
  return dispatch_dtype(t.dtype(), [&]<class T>() {
    const T* p = t.data<T>();
    return std::vector<double>(p, p + t.numel());
  });
}

std::vector<double> nchw_values(const Tensor& t) {
  return values(t.ndim() == 4 ? convert_layout_reference(t, Layout::NCHW) : t);
}

std::string test_name(std::string name) {
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

}  // namespace tunecnn::testing
