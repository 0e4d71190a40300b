#include "core/init.h"

#include <cmath>

namespace tunecnn {
namespace {
template <class Draw> void fill_with(Tensor& tensor, Draw draw) {
  dispatch_dtype(tensor.dtype(), [&]<class T>() {
    T* p = tensor.data<T>();
    for (std::int64_t i = 0; i < tensor.numel(); ++i) p[i] = static_cast<T>(draw());
  });
}
}  // namespace

void kaiming_normal(Tensor& weight, std::int64_t fan_in, Rng& rng) {
  TUNECNN_CHECK(fan_in > 0, "kaiming_normal: fan_in must be positive, got ", fan_in);
  const double stddev = std::sqrt(2.0 / static_cast<double>(fan_in));
  fill_with(weight, [&] { return rng.normal(0.0, stddev); });
}

void kaiming_uniform(Tensor& weight, std::int64_t fan_in, Rng& rng) {
  TUNECNN_CHECK(fan_in > 0, "kaiming_uniform: fan_in must be positive, got ", fan_in);
  const double bound = std::sqrt(6.0 / static_cast<double>(fan_in));
  uniform_fill(weight, -bound, bound, rng);
}

void xavier_uniform(Tensor& weight, std::int64_t fan_in, std::int64_t fan_out, Rng& rng) {
  TUNECNN_CHECK(fan_in + fan_out > 0, "xavier_uniform: fans must be positive");
  const double bound = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  uniform_fill(weight, -bound, bound, rng);
}

void uniform_fill(Tensor& tensor, double low, double high, Rng& rng) {
  fill_with(tensor, [&] { return rng.uniform(low, high); });
}

}  // namespace tunecnn
