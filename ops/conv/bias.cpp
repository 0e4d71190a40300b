#include "ops/conv/bias.h"

#include <tbb/parallel_for.h>

#include "core/device.h"

namespace tunecnn {
namespace {

void check_bias_shapes(const char* what, const Tensor& act, const Tensor& bias) {
  TUNECNN_CHECK(act.ndim() == 4, what, ": activations must be 4-D, got ", act.describe());
  TUNECNN_CHECK(bias.ndim() == 1 && bias.dim(0) == act.dim(1) && bias.dtype() == act.dtype(), what,
                ": bias ", bias.describe(), " does not match activations ", act.describe());
  check_same_device(what, act, bias);
}

}  // namespace

BiasChannelBlocks bias_channel_blocks(const Tensor& act) {
  const std::int64_t n = act.dim(0), c = act.dim(1), plane = act.dim(2) * act.dim(3);
  switch (act.layout()) {
    case Layout::NCHW: return {n, c, plane};
    case Layout::CHWN: return {1, c, plane * n};
    case Layout::NHWC: return {n * plane, c, 1};
  }
  return {0, 0, 0};
}

void add_bias(Tensor& dst, const Tensor& bias) {
  check_bias_shapes("add_bias", dst, bias);
  TUNECNN_ON_CUDA(dst, cuda::add_bias(dst, bias));
  const BiasChannelBlocks b = bias_channel_blocks(dst);
  dispatch_dtype(dst.dtype(), [&]<class T>() {
    T* out = dst.data<T>();
    const T* values = bias.data<T>();
    if (b.inner == 1) {  // NHWC: one row of C values per pixel
      tbb::parallel_for(std::int64_t{0}, b.outer, [&](std::int64_t o) {
        T* row = out + o * b.channels;
        for (std::int64_t c = 0; c < b.channels; ++c) row[c] += values[c];
      });
      return;
    }
    tbb::parallel_for(std::int64_t{0}, b.outer * b.channels, [&](std::int64_t oc) {
      T* row = out + oc * b.inner;
      const T value = values[oc % b.channels];
      for (std::int64_t i = 0; i < b.inner; ++i) row[i] += value;
    });
  });
}

void bias_grad(const Tensor& diff_dst, Tensor& diff_bias) {
  check_bias_shapes("bias_grad", diff_dst, diff_bias);
  TUNECNN_ON_CUDA(diff_dst, cuda::bias_grad(diff_dst, diff_bias));
  const BiasChannelBlocks b = bias_channel_blocks(diff_dst);
  dispatch_dtype(diff_dst.dtype(), [&]<class T>() {
    const T* in = diff_dst.data<T>();
    T* out = diff_bias.data<T>();
    // One task per channel, summing in index order: the result does not depend on scheduling.
    tbb::parallel_for(std::int64_t{0}, b.channels, [&](std::int64_t c) {
      double acc = 0;
      for (std::int64_t o = 0; o < b.outer; ++o) {
        const T* row = in + (o * b.channels + c) * b.inner;
        for (std::int64_t i = 0; i < b.inner; ++i) acc += row[i];
      }
      out[c] = static_cast<T>(acc);
    });
  });
}

}  // namespace tunecnn
