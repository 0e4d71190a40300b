#include "ops/layout/reference.h"

#include <array>

namespace tunecnn {
namespace {

// Element strides of the logical dimensions (n, c, h, w) in a given memory order.
std::array<std::int64_t, 4> strides_of(const Shape& s, Layout layout) {
  const std::int64_t n = s[0], c = s[1], h = s[2], w = s[3];
  switch (layout) {
    case Layout::NCHW: return {c * h * w, h * w, w, 1};
    case Layout::CHWN: return {1, h * w * n, w * n, n};
    case Layout::NHWC: return {h * w * c, 1, w * c, c};
  }
  return {0, 0, 0, 0};
}

}  // namespace

Tensor convert_layout_reference(const Tensor& src, Layout layout) {
  TUNECNN_CHECK(src.defined() && src.device() == Device::cpu, "convert_layout_reference needs a "
                "CPU tensor, got ", src.defined() ? src.describe() : "an undefined tensor");
  if (src.ndim() != 4) {
    TUNECNN_CHECK(layout == Layout::NCHW, "only 4-D tensors have a ", to_string(layout),
                  " layout, got ", src.describe());
    return src.clone();
  }
  Tensor dst = Tensor::empty(src.shape(), src.dtype(), Device::cpu, layout);
  const Shape& s = src.shape();
  const auto from = strides_of(s, src.layout()), to = strides_of(s, layout);
  dispatch_dtype(src.dtype(), [&]<class T>() {
    const T* in = src.data<T>();
    T* out = dst.data<T>();
    for (std::int64_t n = 0; n < s[0]; ++n)
      for (std::int64_t c = 0; c < s[1]; ++c)
        for (std::int64_t h = 0; h < s[2]; ++h)
          for (std::int64_t w = 0; w < s[3]; ++w)
            out[n * to[0] + c * to[1] + h * to[2] + w * to[3]] =
                in[n * from[0] + c * from[1] + h * from[2] + w * from[3]];
  });
  return dst;
}

}  // namespace tunecnn
