#include "tests/support/conv_testing.h"

#include <algorithm>

#include "models/conv_layers.h"
#include "ops/conv/verify.h"
#include "ops/layout/reference.h"

namespace tunecnn::testing {
namespace {

// The reference runs these many multiply-adds in a few milliseconds.
constexpr std::int64_t kMaxReferenceMacs = 3'000'000;

ConvShape edge(const char* name, int mb, int ic, int ih, int iw, int oc, int kh, int kw, int sh,
               int sw, int ph, int pw, int g) {
  return {name, ConvProblem{Direction::fwd, mb, ic, ih, iw, oc, kh, kw, sh, sw, ph, pw, g}};
}

int halved(int v) {
  return std::max(1, v / 2);
}

// Halves the input height or width, keeping the padded input at least as large as the kernel
// and at least two output rows or columns.
bool shrink_spatial(ConvProblem& p) {
  const bool along_h = p.oh() >= p.ow();
  int& size = along_h ? p.ih : p.iw;
  const int k = along_h ? p.kh : p.kw, pad = along_h ? p.ph : p.pw, s = along_h ? p.sh : p.sw;
  const int smallest = std::max(1, k - 2 * pad + s);
  if (size / 2 < smallest || (along_h ? p.oh() : p.ow()) < 4) return false;
  size /= 2;
  return true;
}

bool shrink_channels(ConvProblem& p) {
  if (p.g == p.ic && p.g == p.oc && p.g > 1) {  // depthwise stays depthwise
    p.ic = p.oc = p.g = halved(p.g);
    return true;
  }
  if (p.g != 1 || (p.ic == 1 && p.oc == 1)) return false;
  (p.ic >= p.oc ? p.ic : p.oc) = halved(p.ic >= p.oc ? p.ic : p.oc);
  return true;
}

}  // namespace

// Down to an 8x8 output the spatial size goes first (it keeps the channel counts that shape the
// GEMMs); below that, channels; then the spatial size again.
ConvProblem scaled_down(ConvProblem p, std::int64_t max_macs) {
  while (p.macs() > max_macs) {
    if (p.oh() * p.ow() > 64 && shrink_spatial(p)) continue;
    if (!shrink_channels(p) && !shrink_spatial(p)) break;
  }
  return p;
}

const std::vector<ConvShape>& edge_case_shapes() {
  // clang-format off
  static const std::vector<ConvShape> shapes = {
      //    name          mb  ic  ih  iw  oc kh kw sh sw ph pw  g
      edge("batch1",        1,  3,  8,  8,  4, 3, 3, 1, 1, 1, 1, 1),
      edge("odd7x5",        2,  3,  7,  5,  5, 3, 3, 1, 1, 0, 0, 1),
      edge("odd_batch5",    5,  2,  6,  7,  3, 3, 3, 1, 1, 1, 1, 1),
      edge("batch9_simd",   9,  3,  6,  5,  4, 3, 3, 1, 1, 1, 1, 1),
      edge("batch17_simd", 17,  2,  5,  6,  3, 3, 3, 1, 1, 1, 1, 1),
      edge("stride2_pad1",  3,  4,  7,  5,  6, 3, 3, 2, 2, 1, 1, 1),
      edge("k5_s2_p2",      2,  2,  9, 11,  3, 5, 5, 2, 2, 2, 2, 1),
      edge("k5_p0_full",    2,  2,  5,  5,  3, 5, 5, 1, 1, 0, 0, 1),
      edge("k1",            2,  6,  5,  7,  4, 1, 1, 1, 1, 0, 0, 1),
      edge("k1_stride2",    2,  4,  7,  7,  3, 1, 1, 2, 2, 0, 0, 1),
      edge("k1_pad1",       2,  4,  5,  5,  3, 1, 1, 1, 1, 1, 1, 1),
      edge("k1_groups2",    3,  4,  5,  5,  4, 1, 1, 1, 1, 0, 0, 2),
      edge("pad2_k3",       2,  3,  6,  5,  2, 3, 3, 1, 1, 2, 2, 1),
      edge("pad3_k3",       2,  2,  4,  5,  3, 3, 3, 1, 1, 3, 3, 1),
      edge("k3_input1x1",   2,  3,  1,  1,  2, 3, 3, 1, 1, 1, 1, 1),
      edge("k3_s3",         2,  3,  9,  8,  4, 3, 3, 3, 3, 0, 1, 1),
      edge("groups2",       2,  4,  6,  6,  6, 3, 3, 1, 1, 1, 1, 2),
      edge("groups4_s2_p2", 3,  8,  7,  5,  8, 3, 3, 2, 2, 2, 2, 4),
      edge("depthwise",     2,  6,  8,  8,  6, 3, 3, 1, 1, 1, 1, 6),
      edge("depthwise_x2",  2,  4,  9,  9,  8, 5, 5, 2, 2, 2, 2, 4),
      edge("anisotropic",   2,  3,  8,  9,  4, 3, 5, 1, 2, 0, 2, 1),
      edge("aniso_k5x3",    2,  3,  9,  7,  4, 5, 3, 2, 1, 2, 1, 1),
      // Depthwise (g == ic == oc): C = 12, 24, 72 give diagonal several group sizes; widths past
      // 16 and 32 columns reach the NCHW vector loops, C = 72 the NHWC blocks and channel tail.
      edge("dw_s2_odd",     3, 12,  9,  7, 12, 3, 3, 2, 2, 1, 1, 12),
      edge("dw_p0_b1",      1, 24,  7,  9, 24, 3, 3, 1, 1, 0, 0, 24),
      edge("dw_k5_wide",    2, 12,  6, 40, 12, 5, 5, 1, 1, 2, 2, 12),
      edge("dw_k5_s2",      3, 24,  7, 45, 24, 5, 5, 2, 2, 2, 2, 24),
      edge("dw_out1x1",     3, 12,  3,  3, 12, 3, 3, 1, 1, 0, 0, 12),
      edge("dw_7x7_b1",     1, 24,  7,  7, 24, 3, 3, 1, 1, 1, 1, 24),
      edge("dw_wide",       2, 12,  4, 37, 12, 3, 3, 1, 1, 1, 1, 12),
      edge("dw_wide_s2",    1, 12,  5, 75, 12, 3, 3, 2, 2, 1, 1, 12),
      edge("dw_c72",        2, 72,  5,  6, 72, 3, 3, 1, 1, 1, 1, 72),
      edge("dw_pad3",       2, 12,  4,  5, 12, 3, 3, 1, 1, 3, 3, 12),
      edge("dw_aniso",      2,  8,  9,  7,  8, 3, 5, 2, 1, 1, 2,  8),
      edge("dw_k2_s2",      2, 12,  7,  9, 12, 2, 2, 2, 2, 0, 1, 12),
  };
  // clang-format on
  return shapes;
}

const std::vector<ConvShape>& model_layer_shapes() {
  static const std::vector<ConvShape> shapes = [] {
    std::vector<ConvShape> out;
    for (const ConvLayer& layer : all_conv_layers()) {
      ConvProblem p = layer.problem;
      p.mb = 2;
      std::string name = layer.set + "_" + layer.name;
      for (char& c : name)
        if (c == '-') c = '_';
      const ConvProblem scaled = scaled_down(p, kMaxReferenceMacs);
      const bool seen = std::any_of(out.begin(), out.end(),
                                    [&](const ConvShape& s) { return s.problem == scaled; });
      if (!seen) out.push_back({name, scaled});
    }
    return out;
  }();
  return shapes;
}

ConvArgs make_conv_args(const ConvProblem& p, std::uint64_t seed) {
  Rng rng(seed);
  return random_conv_args(p, rng);
}

Tensor run_in_layout(const ConvPlan& plan, const ConvProblem& p, const ConvArgs& nchw,
                     Layout layout) {
  ConvArgs args = conv_args_in_layout(nchw, layout);
  run_conv(plan, p, args);
  return convert_layout_reference(conv_output(args, p.dir), Layout::NCHW);
}



ConvProblem on_device(ConvProblem p, Device device) {
  p.device = device;
  return p;
}

::testing::AssertionResult close_relative(const Tensor& got, const Tensor& want, double tol) {
  const std::string why = relative_mismatch(got, want, tol);
  if (why.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << why;
}

}  // namespace tunecnn::testing
