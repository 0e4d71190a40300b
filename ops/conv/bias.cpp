#include "ops/conv/bias.h"

#include <tbb/parallel_for.h>

namespace tunecnn {
namespace {

void check_bias_shapes(const char* what, const Tensor& act, const Tensor& bias) {
  TUNECNN_CHECK(act.ndim() == 4 && act.layout() == Layout::NCHW, what,
                ": activations must be 4-D NCHW, got ", act.describe());
  TUNECNN_CHECK(bias.ndim() == 1 && bias.dim(0) == act.dim(1) && bias.dtype() == act.dtype(), what,
                ": bias ", bias.describe(), " does not match activations ", act.describe());
}

}  // namespace

void add_bias(Tensor& dst, const Tensor& bias) {
  check_bias_shapes("add_bias", dst, bias);
  dispatch_dtype(dst.dtype(), [&]<class T>() {
    const std::int64_t channels = dst.dim(1), plane = dst.dim(2) * dst.dim(3);
    T* out = dst.data<T>();
    const T* b = bias.data<T>();
    tbb::parallel_for(std::int64_t{0}, dst.dim(0) * channels, [&](std::int64_t nc) {
      T* row = out + nc * plane;
      const T value = b[nc % channels];
      for (std::int64_t i = 0; i < plane; ++i) row[i] += value;
    });
  });
}

void bias_grad(const Tensor& diff_dst, Tensor& diff_bias) {
  check_bias_shapes("bias_grad", diff_dst, diff_bias);
  dispatch_dtype(diff_dst.dtype(), [&]<class T>() {
    const std::int64_t batch = diff_dst.dim(0), channels = diff_dst.dim(1);
    const std::int64_t plane = diff_dst.dim(2) * diff_dst.dim(3);
    const T* in = diff_dst.data<T>();
    T* out = diff_bias.data<T>();
    // One task per channel: each sums its own images and pixels in index order.
    tbb::parallel_for(std::int64_t{0}, channels, [&](std::int64_t c) {
      double acc = 0;
      for (std::int64_t n = 0; n < batch; ++n) {
        const T* row = in + (n * channels + c) * plane;
        for (std::int64_t i = 0; i < plane; ++i) acc += row[i];
      }
      out[c] = static_cast<T>(acc);
    });
  });
}

}  // namespace tunecnn
