// Inverted dropout. The mask is drawn serially, one 64-bit draw per element in element order,
// so a given RNG state always yields the same mask whatever the thread count (checkpoint resume
// and gradient checks rely on that); only the multiply runs as TBB tasks over disjoint chunks.
// Backward multiplies by the same mask, the only thing the closure keeps. For a GPU input the
// mask is drawn on the host the same way and uploaded: the GPU draws nothing itself, so CPU and
// GPU runs from one RNG state drop the same elements and checkpoints resume either way.
#include "ops/dropout.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <Eigen/Core>
#include <sstream>

#include "core/device.h"

namespace tunecnn {
namespace {

constexpr std::int64_t kGrain = 1 << 15;

void check_p(double p) {
  TUNECNN_CHECK(p >= 0.0 && p < 1.0, "dropout probability must be in [0, 1), got ", p);
}

}  // namespace

void dropout_mask(Tensor& mask, double p, Rng& rng) {
  check_p(p);
  TUNECNN_CHECK(mask.device() == Device::cpu, "dropout_mask draws on the host: ", mask.describe(),
                " must be a CPU tensor (upload it with to(Device::cuda) afterwards)");
  const double keep_scale = 1.0 / (1.0 - p);
  dispatch_dtype(mask.dtype(), [&]<class T>() {
    T* m = mask.data<T>();
    for (std::int64_t i = 0, n = mask.numel(); i < n; ++i) {
      // The top 53 bits as a double in [0, 1): exact, and cheaper than a distribution object.
      const double u = static_cast<double>(rng.next_u64() >> 11) * 0x1.0p-53;
      m[i] = u < p ? T(0) : static_cast<T>(keep_scale);
    }
  });
}

void dropout_apply(const Tensor& x, const Tensor& mask, Tensor& y) {
  TUNECNN_CHECK(x.numel() == mask.numel() && x.numel() == y.numel() && x.dtype() == mask.dtype() &&
                    x.dtype() == y.dtype(),
                "dropout_apply: ", x.describe(), " * ", mask.describe(), " -> ", y.describe());
  check_same_device("dropout_apply", x, mask, y);
  TUNECNN_ON_CUDA(x, cuda::dropout_apply(x, mask, y));
  dispatch_dtype(x.dtype(), [&]<class T>() {
    using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
    const T* px = x.data<T>();
    const T* pm = mask.data<T>();
    T* py = y.data<T>();
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, x.numel(), kGrain),
                      [&](const tbb::blocked_range<std::int64_t>& r) {
                        const auto len = static_cast<Eigen::Index>(r.size());
                        Eigen::Map<Array>(py + r.begin(), len) =
                            Eigen::Map<const Array>(px + r.begin(), len) *
                            Eigen::Map<const Array>(pm + r.begin(), len);
                      });
  });
}

Variable dropout(const Variable& x, double p, bool training, Rng& rng) {
  check_p(p);
  if (!training || p == 0.0) return x;
  const Tensor& input = x.data();
  Tensor host_mask = Tensor::empty(input.shape(), input.dtype(), Device::cpu, input.layout());
  dropout_mask(host_mask, p, rng);
  const Tensor mask = host_mask.to(input.device());
  Tensor y = Tensor::empty_like(x.data());
  dropout_apply(x.data(), mask, y);
  auto backward = [mask](std::vector<Variable>& in, const Tensor& dy) {
    Tensor dx = Tensor::empty_like(mask);
    dropout_apply(dy, mask, dx);
    in[0].add_grad(dx);
  };
  return Variable(std::move(y), {x}, backward);
}

Dropout::Dropout(double p, std::shared_ptr<Rng> rng) : p_(p), rng_(std::move(rng)) {
  check_p(p);
  TUNECNN_CHECK(rng_ != nullptr, "Dropout(p=", p, ") needs a random number generator");
}

Variable Dropout::forward(const Variable& input) {
  return dropout(input, p_, is_training(), *rng_);
}

std::string Dropout::describe() const {
  std::ostringstream out;
  out << "Dropout(p=" << p_ << ")";
  return out.str();
}

}  // namespace tunecnn
