#include "core/init.h"

#include <cmath>
#include <cstring>

namespace tunecnn {
namespace {
// SplitMix64's finaliser: consecutive inputs give unrelated, evenly spread outputs.
std::uint64_t mix(std::uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
thread_local bool t_weight_init_skipped = false;

template <class Draw> void fill_with(Tensor& tensor, Draw draw) {
  if (t_weight_init_skipped) {
    std::memset(tensor.raw_data(), 0, tensor.nbytes());
    return;
  }
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

NoWeightInitGuard::NoWeightInitGuard() : previous_(t_weight_init_skipped) { t_weight_init_skipped = true; }
NoWeightInitGuard::~NoWeightInitGuard() { t_weight_init_skipped = previous_; }

void hash_fill(Tensor& tensor, double low, double high, std::uint64_t seed) {
  const std::uint64_t base = mix(seed);
  const double scale = (high - low) / 9007199254740992.0;  // 2^53: the top 53 bits as a fraction
  dispatch_dtype(tensor.dtype(), [&]<class T>() {
    T* p = tensor.data<T>();
    for (std::int64_t i = 0; i < tensor.numel(); ++i)
      p[i] = static_cast<T>(low + static_cast<double>(mix(base + static_cast<std::uint64_t>(i)) >> 11) * scale);
  });
}

}  // namespace tunecnn
