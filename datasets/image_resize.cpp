// Separable filtering, one output row at a time: the source rows that feed an output row are
// blended into one float row (vertical pass, contiguous and vectorisable), which the horizontal
// taps then read. Only the columns and rows the crop window needs are touched, and the scratch
// is a single row, so a 4000x3000 photograph costs no more memory than a small one. Each axis is
// a table of fixed-width taps per output pixel (padded with zero weights), so a mirrored crop is
// the same table read backwards.
#include "datasets/image_resize.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "core/error.h"

namespace tunecnn {
namespace {

constexpr int kChannels = 3;

// For each output pixel along one axis: `taps` source pixels from `first`, with their weights.
struct AxisTaps {
  int taps = 0;
  std::vector<int> first;
  std::vector<float> weights;  // output pixels x taps
};

struct SourceSpan {
  int lo = 0, hi = 0;  // inclusive
};

// The source pixels resized pixel i draws from.
SourceSpan source_span(int source, double scale, int i) {
  if (scale <= 1.0) {
    const double at = std::clamp((i + 0.5) * scale - 0.5, 0.0, source - 1.0);
    const int lo = static_cast<int>(at);
    return {lo, std::min(lo + 1, source - 1)};
  }
  // The 1e-9 keeps a rounding error from adding a neighbour with a zero share.
  const int lo = static_cast<int>(std::floor(i * scale + 1e-9));
  const int hi = static_cast<int>(std::ceil((i + 1) * scale - 1e-9)) - 1;
  return {std::clamp(lo, 0, source - 1), std::clamp(hi, 0, source - 1)};
}

// Weight of source pixel s in resized pixel i: bilinear when enlarging, the covered share of
// the area when shrinking.
double tap_weight(int source, double scale, int i, int s) {
  if (scale <= 1.0) {
    const double at = std::clamp((i + 0.5) * scale - 0.5, 0.0, source - 1.0);
    const double frac = at - std::floor(at);
    return s == static_cast<int>(at) ? 1.0 - frac : frac;
  }
  const double begin = i * scale, end = (i + 1) * scale;
  return std::max(0.0, std::min(end, s + 1.0) - std::max(begin, static_cast<double>(s)));
}

// Taps for output pixels 0..count-1, which are resized pixels offset..offset+count-1, or those
// in reverse order when `reverse`.
AxisTaps axis_taps(int source, int resized, int offset, int count, bool reverse) {
  const double scale = static_cast<double>(source) / resized;
  std::vector<SourceSpan> spans(count);
  AxisTaps t;
  for (int j = 0; j < count; ++j) {
    spans[j] = source_span(source, scale, offset + (reverse ? count - 1 - j : j));
    t.taps = std::max(t.taps, spans[j].hi - spans[j].lo + 1);
  }
  t.first.resize(count);
  t.weights.assign(static_cast<std::size_t>(count) * t.taps, 0.0f);
  for (int j = 0; j < count; ++j) {
    const int i = offset + (reverse ? count - 1 - j : j);
    // A short span near the end shifts left, so every pixel reads `taps` values inside the row.
    t.first[j] = std::min(spans[j].lo, source - t.taps);
    double sum = 0;
    for (int s = spans[j].lo; s <= spans[j].hi; ++s) sum += tap_weight(source, scale, i, s);
    for (int s = spans[j].lo; s <= spans[j].hi; ++s)
      t.weights[static_cast<std::size_t>(j) * t.taps + (s - t.first[j])] =
          static_cast<float>(tap_weight(source, scale, i, s) / sum);
  }
  return t;
}

// row = sum over output row y's taps of weight * source row, columns [x_begin, x_begin + n/3).
void blend_rows(const std::uint8_t* rgb, int width, const AxisTaps& ys, int y, int x_begin,
                std::vector<float>& row) {
  const float* weights = &ys.weights[static_cast<std::size_t>(y) * ys.taps];
  const std::size_t stride = static_cast<std::size_t>(width) * kChannels;
  const std::size_t n = row.size();
  float* out = row.data();
  bool first = true;
  for (int k = 0; k < ys.taps; ++k) {
    const float w = weights[k];
    if (w == 0.0f) continue;
    const std::uint8_t* src = rgb + static_cast<std::size_t>(ys.first[y] + k) * stride +
                              static_cast<std::size_t>(x_begin) * kChannels;
    if (first) {
      for (std::size_t i = 0; i < n; ++i) out[i] = w * src[i];
      first = false;
    } else {
      for (std::size_t i = 0; i < n; ++i) out[i] += w * src[i];
    }
  }
}

// Writes output row y of all three planes from the blended row.
void filter_columns(const std::vector<float>& row, const AxisTaps& xs, int x_begin, int y, int side,
                    const ChannelAffine& normalise, float* out) {
  const std::size_t plane = static_cast<std::size_t>(side) * side;
  float* r_out = out + static_cast<std::size_t>(y) * side;
  float* g_out = r_out + plane;
  float* b_out = g_out + plane;
  for (int x = 0; x < side; ++x) {
    const float* w = &xs.weights[static_cast<std::size_t>(x) * xs.taps];
    const float* p = row.data() + static_cast<std::size_t>(xs.first[x] - x_begin) * kChannels;
    float r = 0, g = 0, b = 0;
    for (int k = 0; k < xs.taps; ++k, p += kChannels) {
      r += w[k] * p[0];
      g += w[k] * p[1];
      b += w[k] * p[2];
    }
    r_out[x] = r * normalise.scale[0] + normalise.shift[0];
    g_out[x] = g * normalise.scale[1] + normalise.shift[1];
    b_out[x] = b * normalise.scale[2] + normalise.shift[2];
  }
}

}  // namespace

ResizedSize resized_size(int width, int height, int resize_side) {
  TUNECNN_CHECK(width > 0 && height > 0 && resize_side > 0, "cannot resize a ", width, "x", height,
                " image to shorter side ", resize_side, ": sizes must be positive");
  const double factor = static_cast<double>(resize_side) / std::min(width, height);
  return {std::max(resize_side, static_cast<int>(std::lround(width * factor))),
          std::max(resize_side, static_cast<int>(std::lround(height * factor)))};
}

void resize_crop(const std::uint8_t* rgb, int width, int height, ResizedSize resized,
                 const CropWindow& crop, const ChannelAffine& normalise, float* out) {
  TUNECNN_CHECK(crop.side > 0 && crop.x >= 0 && crop.y >= 0 &&
                    crop.x + crop.side <= resized.width && crop.y + crop.side <= resized.height,
                "crop window ", crop.side, "x", crop.side, " at (", crop.x, ", ", crop.y,
                ") does not fit the resized ", resized.width, "x", resized.height, " image");
  const AxisTaps xs = axis_taps(width, resized.width, crop.x, crop.side, crop.flip);
  const AxisTaps ys = axis_taps(height, resized.height, crop.y, crop.side, false);
  const int x_begin = *std::min_element(xs.first.begin(), xs.first.end());
  const int x_end = *std::max_element(xs.first.begin(), xs.first.end()) + xs.taps;
  std::vector<float> row(static_cast<std::size_t>(x_end - x_begin) * kChannels);
  for (int y = 0; y < crop.side; ++y) {
    blend_rows(rgb, width, ys, y, x_begin, row);
    filter_columns(row, xs, x_begin, y, crop.side, normalise, out);
  }
}

}  // namespace tunecnn
