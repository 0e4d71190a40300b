#include "core/types.h"

#include "core/error.h"

namespace tunecnn {

std::size_t dtype_size(DType dtype) { return dtype == DType::f32 ? 4 : 8; }

std::string_view to_string(DType dtype) { return dtype == DType::f32 ? "f32" : "f64"; }

std::string_view to_string(Device device) { return device == Device::cpu ? "cpu" : "cuda"; }

std::string_view to_string(Layout layout) {
  switch (layout) {
    case Layout::NCHW: return "NCHW";
    case Layout::CHWN: return "CHWN";
    case Layout::NHWC: return "NHWC";
  }
  return "?";
}

Layout parse_layout(std::string_view text) {
  for (Layout layout : {Layout::NCHW, Layout::CHWN, Layout::NHWC})
    if (text == to_string(layout)) return layout;
  TUNECNN_FAIL("unknown layout '", text, "' (expected NCHW, CHWN or NHWC)");
}

Device parse_device(std::string_view text) {
  for (Device device : {Device::cpu, Device::cuda})
    if (text == to_string(device)) return device;
  TUNECNN_FAIL("unknown device '", text, "' (expected cpu or cuda)");
}

std::string shape_str(const Shape& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

std::int64_t shape_numel(const Shape& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

Shape physical_shape(const Shape& nchw, Layout layout) {
  if (nchw.size() != 4 || layout == Layout::NCHW) return nchw;
  const std::int64_t n = nchw[0], c = nchw[1], h = nchw[2], w = nchw[3];
  if (layout == Layout::CHWN) return {c, h, w, n};
  return {n, h, w, c};
}

}  // namespace tunecnn
