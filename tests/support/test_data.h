#pragma once
// Where the tests find real data, and small helpers shared by the suites.
#include <filesystem>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/tensor.h"

namespace tunecnn::testing {

// ../shared/data beside the repository, or $TUNECNN_DATA_DIR.
std::filesystem::path shared_data_dir();
// A fresh empty folder under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

Tensor random_tensor(const Shape& shape, Rng& rng, DType dtype = DType::f32, double low = -1.0,
                     double high = 1.0);
// A tensor's elements as doubles, in memory order (f32 or f64).
std::vector<double> values(const Tensor& t);
// A 4-D tensor's elements in logical NCHW order whatever its layout; others as values().
std::vector<double> nchw_values(const Tensor& t);
// A model or file name as a GoogleTest parameter name: every character but letters and digits
// becomes '_' ("mobilenet-0.25-128" -> "mobilenet_0_25_128").
std::string test_name(std::string name);

}  // namespace tunecnn::testing
