// Direct convolution on CHWN activations with the batch in the SIMD lanes: cuda-convnet's layout
// and loop order (Li et al., SC'16, shared/PAPERS.md sec. 2). Memory is [c][h][w][n], so the N
// images of one pixel are contiguous vectors; each weight is broadcast once and multiplied into
// all of them. fwd and bwd_data (the gather form) keep 6 output / input channels x up to 4
// vectors of images in registers; bwd_weights keeps 6 output channels x 3 neighbouring taps and
// reduces the lanes at the end. Batches that are not a multiple of the vector width finish with
// half and quarter vectors and single lanes, so no load is masked.
// Constraints: CHWN activations on the CPU, f32/f64; any batch, stride, padding and groups.
// Tunables: none (blocks of 2, 4 and 6 channels were timed: 6 wins every layer tried).
// TBB splits over outputs that tasks write disjointly, so results never depend on scheduling.
#include "ops/conv/direct_chwn.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "ops/conv/args.h"
#include "ops/conv/simd.h"

namespace tunecnn {
namespace {

using simd::kVectorBytes;
using simd::lane_sum;
using simd::load;
using simd::store;
using simd::Vec;
// Register blocks sized for AVX-512's 32 vector registers: 6 x 4 accumulators + 4 loaded vectors
// in fwd and bwd_data (weights are broadcast straight from memory), 6 x 3 + 6 + 3 in bwd_weights.
constexpr int kChannelBlock = 6;
constexpr int kTapBlock = 3;

// Covers images [0, n) widest first: blocks of 4, 2 and 1 full vectors, then a half and a
// quarter vector, then single lanes. Calls f.template operator()<L, LB>(n0) for LB vectors of L
// lanes starting at image n0.
template <class T, class F>
void for_each_lane_block(int n, F&& f) {
  constexpr int V = kVectorBytes / sizeof(T);
  int n0 = 0;
  for (; n - n0 >= 4 * V; n0 += 4 * V) f.template operator()<V, 4>(n0);
  if (n - n0 >= 2 * V) f.template operator()<V, 2>(std::exchange(n0, n0 + 2 * V));
  if (n - n0 >= V) f.template operator()<V, 1>(std::exchange(n0, n0 + V));
  if (n - n0 >= V / 2) f.template operator()<V / 2, 1>(std::exchange(n0, n0 + V / 2));
  if (n - n0 >= V / 4) f.template operator()<V / 4, 1>(std::exchange(n0, n0 + V / 4));
  for (; n0 < n; ++n0) f.template operator()<1, 1>(n0);
}

// The same cover for reductions over the batch, where the vectors of one width need no separate
// registers: f.template operator()<L>(n0, count) for count vectors of L lanes from image n0.
template <class T, class F>
void for_each_lane_run(int n, F&& f) {
  constexpr int V = kVectorBytes / sizeof(T);
  int n0 = 0;
  if (n / V > 0) f.template operator()<V>(std::exchange(n0, n / V * V), n / V);
  if (n - n0 >= V / 2) f.template operator()<V / 2>(std::exchange(n0, n0 + V / 2), 1);
  if (n - n0 >= V / 4) f.template operator()<V / 4>(std::exchange(n0, n0 + V / 4), 1);
  if (n0 < n) f.template operator()<1>(n0, n - n0);
}

// Channels [first, first + size) of one group: register blocks of Block, the last one shorter.
struct ChannelBlock {
  int first, size;
};

std::vector<ChannelBlock> channel_blocks(int channels, int per_group, int block) {
  std::vector<ChannelBlock> blocks;
  for (int start = 0; start < channels; start += per_group)
    for (int c = start; c < start + per_group; c += block)
      blocks.push_back({c, std::min(block, start + per_group - c)});
  return blocks;
}

// Calls f.template operator()<B>() with B = size (1 <= size <= Block) known at compile time, so
// a short block (3 RGB channels, say) still keeps its accumulators in registers.
template <int Block, class F>
void with_block_size(int size, F&& f) {
  if constexpr (Block > 1)
    if (size < Block) return with_block_size<Block - 1>(size, f);
  f.template operator()<Block>();
}

struct Range {
  int lo, hi;  // [lo, hi)
};

// Kernel taps k whose input pos * stride - pad + k lies in [0, in).
Range taps_inside(int pos, int stride, int pad, int k, int in) {
  const int base = pos * stride - pad;
  return {std::max(0, -base), std::min(k, in - base)};
}

// Output positions o in [0, out) that read input pos, through tap pos + pad - o * stride < k.
Range outputs_of_input(int pos, int stride, int pad, int k, int out) {
  const int t = pos + pad, first = t - (k - 1);  // bounds on o * stride
  const int lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  return {lo, std::max(lo, std::min(out, t / stride + 1))};
}

// Output positions o in [0, out) whose input o * stride - pad + tap lies in [0, in).
Range outputs_reading(int tap, int stride, int pad, int in, int out) {
  const int first = pad - tap, last = in - 1 + pad - tap;  // bounds on o * stride
  if (last < 0) return {0, 0};
  const int lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  return {lo, std::max(lo, std::min(out, last / stride + 1))};
}

// Strides of a CHWN tensor and of the weights, shared by the kernels.
struct Geometry {
  int n, icg, ocg, oh, ow;
  std::size_t src_plane, dst_plane, wei_o, wei_c;

  explicit Geometry(const ConvProblem& p)
      : n(p.mb),
        icg(p.ic / p.g),
        ocg(p.oc / p.g),
        oh(p.oh()),
        ow(p.ow()),
        src_plane(static_cast<std::size_t>(p.ih) * p.iw * p.mb),
        dst_plane(static_cast<std::size_t>(oh) * ow * p.mb),
        wei_o(static_cast<std::size_t>(icg) * p.kh * p.kw),
        wei_c(static_cast<std::size_t>(p.kh) * p.kw) {}
};

// fwd and bwd_data sum over channels. Summing all of them per output walks kh x kw windows of
// every channel (64 channels x 5x5 x 64 images is 400 KB, far out of L1); summing as many as
// fit in about L1 at a time and storing partial sums in between lets the windows of a row stay
// in L1, so sliding along the row reloads one column (cifar conv2, batch 128: fwd 1.1x and
// bwd_data 1.4x faster than one pass).
constexpr std::size_t kWindowBytes = 32 * 1024;

template <class T>
int channels_per_pass(const ConvProblem& p, int lanes, int channels) {
  const std::size_t window = static_cast<std::size_t>(p.kh) * p.kw * lanes * sizeof(T);
  return static_cast<int>(std::clamp<std::size_t>(kWindowBytes / window, 1, channels));
}

// The register block: B channels x LB vectors of L lanes, zeroed or loaded from partial sums.
template <class T, int L, int LB, int B>
struct Accumulators {
  Vec<T, L> v[B][LB];

  void start(const T* out, std::size_t plane, bool partial) {
    for (int b = 0; b < B; ++b)
      for (int l = 0; l < LB; ++l)
        v[b][l] = partial ? load<T, L>(out + b * plane + l * L) : Vec<T, L>{};
  }
  // The weights of the block's channels for one (channel, tap) lie `stride` apart.
  void add(const T* in, const T* weights, std::size_t stride) {
    Vec<T, L> x[LB];
    for (int l = 0; l < LB; ++l) x[l] = load<T, L>(in + l * L);
    for (int b = 0; b < B; ++b) {
      const T w = weights[b * stride];
      for (int l = 0; l < LB; ++l) v[b][l] += w * x[l];
    }
  }
  void finish(T* out, std::size_t plane) const {
    for (int b = 0; b < B; ++b)
      for (int l = 0; l < LB; ++l) store<T, L>(out + b * plane + l * L, v[b][l]);
  }
};

// dst[o0 + b][y][x][n0 : n0 + L * LB] for b < OB and every x of row y, summed over the input
// channels cs of the group; `partial` adds to the sums of earlier channels.
template <class T, int L, int LB, int OB>
void fwd_row(const ConvProblem& p, const Geometry& g, const T* src, const T* wei, T* dst, int o0,
             int y, int n0, Range cs, bool partial) {
  const int c_first = o0 / g.ocg * g.icg;
  const Range rows = taps_inside(y, p.sh, p.ph, p.kh, p.ih);
  for (int x = 0; x < g.ow; ++x) {
    const Range cols = taps_inside(x, p.sw, p.pw, p.kw, p.iw);
    T* out = dst + o0 * g.dst_plane + (static_cast<std::size_t>(y) * g.ow + x) * g.n + n0;
    Accumulators<T, L, LB, OB> acc;
    acc.start(out, g.dst_plane, partial);
    for (int c = cs.lo; c < cs.hi; ++c) {
      const T* w = wei + o0 * g.wei_o + c * g.wei_c;
      const T* plane = src + (c_first + c) * g.src_plane + n0;
      for (int ki = rows.lo; ki < rows.hi; ++ki) {
        const int iy = y * p.sh - p.ph + ki, ix = x * p.sw - p.pw + cols.lo;
        const T* in = plane + (static_cast<std::size_t>(iy) * p.iw + ix) * g.n;
        for (int kj = cols.lo; kj < cols.hi; ++kj, in += g.n)
          acc.add(in, w + ki * p.kw + kj, g.wei_o);
      }
    }
    acc.finish(out, g.dst_plane);
  }
}

// One task per (output channel block, output row).
template <class T, int OB>
void direct_chwn_fwd(const ConvProblem& p, const T* src, const T* wei, T* dst) {
  const Geometry g(p);
  const std::vector<ChannelBlock> blocks = channel_blocks(p.oc, g.ocg, OB);
  tbb::parallel_for(0, static_cast<int>(blocks.size()) * g.oh, [&](int task) {
    const ChannelBlock block = blocks[task / g.oh];
    const int y = task % g.oh;
    with_block_size<OB>(block.size, [&]<int B>() {
      const int pass = channels_per_pass<T>(p, g.n, g.icg);
      for (int c = 0; c < g.icg; c += pass)
        for_each_lane_block<T>(g.n, [&]<int L, int LB>(int n0) {
          fwd_row<T, L, LB, B>(p, g, src, wei, dst, block.first, y, n0,
                               {c, std::min(c + pass, g.icg)}, c > 0);
        });
    });
  });
}

// The gather form: diff_src[c0 + b][iy][ix][n0 : n0 + L * LB] for b < CB and every ix of row
// iy, summed over the output channels os of the group (offsets inside it) that read it.
template <class T, int L, int LB, int CB>
void bwd_data_row(const ConvProblem& p, const Geometry& g, const T* diff_dst, const T* wei,
                  T* diff_src, int c0, int iy, int n0, Range os, bool partial) {
  const int o_first = c0 / g.icg * g.ocg, c = c0 % g.icg;
  const Range ys = outputs_of_input(iy, p.sh, p.ph, p.kh, g.oh);
  for (int ix = 0; ix < p.iw; ++ix) {
    const Range xs = outputs_of_input(ix, p.sw, p.pw, p.kw, g.ow);
    T* out = diff_src + c0 * g.src_plane + (static_cast<std::size_t>(iy) * p.iw + ix) * g.n + n0;
    Accumulators<T, L, LB, CB> acc;
    acc.start(out, g.src_plane, partial);
    for (int o = o_first + os.lo; o < o_first + os.hi; ++o) {
      const T* w = wei + o * g.wei_o + c * g.wei_c;
      const T* plane = diff_dst + o * g.dst_plane + n0;
      // Outputs in increasing address order; the taps run backwards.
      for (int y = ys.lo; y < ys.hi; ++y) {
        const int ki = iy + p.ph - y * p.sh, kj = ix + p.pw - xs.lo * p.sw;
        const T* in = plane + (static_cast<std::size_t>(y) * g.ow + xs.lo) * g.n;
        const T* tap = w + ki * p.kw + kj;
        for (int x = xs.lo; x < xs.hi; ++x, in += g.n, tap -= p.sw) acc.add(in, tap, g.wei_c);
      }
    }
    acc.finish(out, g.src_plane);
  }
}

// One task per (input channel block, input row).
template <class T, int CB>
void direct_chwn_bwd_data(const ConvProblem& p, const T* diff_dst, const T* wei, T* diff_src) {
  const Geometry g(p);
  const std::vector<ChannelBlock> blocks = channel_blocks(p.ic, g.icg, CB);
  tbb::parallel_for(0, static_cast<int>(blocks.size()) * p.ih, [&](int task) {
    const ChannelBlock block = blocks[task / p.ih];
    const int iy = task % p.ih;
    with_block_size<CB>(block.size, [&]<int B>() {
      const int pass = channels_per_pass<T>(p, g.n, g.ocg);
      for (int o = 0; o < g.ocg; o += pass)
        for_each_lane_block<T>(g.n, [&]<int L, int LB>(int n0) {
          bwd_data_row<T, L, LB, B>(p, g, diff_dst, wei, diff_src, block.first, iy, n0,
                                    {o, std::min(o + pass, g.ocg)}, o > 0);
        });
    });
  });
}

// bwd_weights blocks OB output channels x KJ neighbouring taps of one kernel row: the taps read
// neighbouring pixels, so each loaded vector of diff_dst serves KJ taps and each of src OB
// channels. For the outputs xs, the taps (ki, kj0 .. kj0 + KJ) and images [n0, n0 + L * count):
// out[b * wei_o + j] += sum of diff_dst[o0 + b][y][x][n] * src[c][iy][ix + j][n]. The lanes stay
// separate partial sums until the end.
template <class T, int L, int OB, int KJ>
void bwd_weights_taps(const ConvProblem& p, const Geometry& g, const T* src, const T* diff_dst,
                      T* out, int o0, int c, int ki, int kj0, Range xs, int n0, int count) {
  if (xs.lo >= xs.hi) return;
  const Range ys = outputs_reading(ki, p.sh, p.ph, p.ih, g.oh);
  Vec<T, L> acc[OB][KJ] = {};
  for (int y = ys.lo; y < ys.hi; ++y) {
    const int iy = y * p.sh - p.ph + ki;
    for (int x = xs.lo; x < xs.hi; ++x) {
      const int ix = x * p.sw - p.pw + kj0;
      const T* d = diff_dst + o0 * g.dst_plane + (static_cast<std::size_t>(y) * g.ow + x) * g.n;
      const T* s = src + c * g.src_plane + (static_cast<std::size_t>(iy) * p.iw + ix) * g.n;
      for (int n = n0; n < n0 + count * L; n += L) {
        Vec<T, L> dv[OB], sv[KJ];
        for (int b = 0; b < OB; ++b) dv[b] = load<T, L>(d + b * g.dst_plane + n);
        for (int j = 0; j < KJ; ++j) sv[j] = load<T, L>(s + j * g.n + n);
        for (int b = 0; b < OB; ++b)
          for (int j = 0; j < KJ; ++j) acc[b][j] += dv[b] * sv[j];
      }
    }
  }
  for (int b = 0; b < OB; ++b)
    for (int j = 0; j < KJ; ++j) out[b * g.wei_o + j] += lane_sum<T, L>(acc[b][j]);
}

// Taps (ki, kj0 .. kj0 + KJ) of diff_wei[o0 : o0 + OB][c], accumulated into `out`. Outputs whose
// inputs are inside the image for every tap of the block run blocked; near a padded border
// each tap sums its remaining outputs alone.
template <class T, int OB, int KJ>
void bwd_weights_tap_block(const ConvProblem& p, const Geometry& g, const T* src, const T* diff_dst,
                           T* out, int o0, int c, int ki, int kj0) {
  const Range all = {outputs_reading(kj0, p.sw, p.pw, p.iw, g.ow).lo,
                     outputs_reading(kj0 + KJ - 1, p.sw, p.pw, p.iw, g.ow).hi};
  const Range both = {all.lo, std::max(all.lo, all.hi)};
  for_each_lane_run<T>(g.n, [&]<int L>(int n0, int count) {
    bwd_weights_taps<T, L, OB, KJ>(p, g, src, diff_dst, out, o0, c, ki, kj0, both, n0, count);
    for (int j = 0; j < KJ; ++j) {
      const Range own = outputs_reading(kj0 + j, p.sw, p.pw, p.iw, g.ow);
      for (Range xs :
           {Range{own.lo, std::min(own.hi, both.lo)}, Range{std::max(own.lo, both.hi), own.hi}})
        bwd_weights_taps<T, L, OB, 1>(p, g, src, diff_dst, out + j, o0, c, ki, kj0 + j, xs, n0,
                                      count);
    }
  });
}

// One task per (output channel block, input channel of its group): it owns those weights, and
// sums into them in a fixed order.
template <class T, int OB, int KJ>
void direct_chwn_bwd_weights(const ConvProblem& p, const T* src, const T* diff_dst, T* diff_wei) {
  const Geometry g(p);
  const std::vector<ChannelBlock> blocks = channel_blocks(p.oc, g.ocg, OB);
  tbb::parallel_for(0, static_cast<int>(blocks.size()) * g.icg, [&](int task) {
    const ChannelBlock block = blocks[task / g.icg];
    const int c_in_group = task % g.icg, c = block.first / g.ocg * g.icg + c_in_group;
    T* mine = diff_wei + block.first * g.wei_o + c_in_group * g.wei_c;
    for (int b = 0; b < block.size; ++b) std::fill_n(mine + b * g.wei_o, g.wei_c, T{0});
    with_block_size<OB>(block.size, [&]<int B>() {
      for (int ki = 0; ki < p.kh; ++ki)
        for (int kj = 0; kj < p.kw; kj += KJ)
          with_block_size<KJ>(std::min(KJ, p.kw - kj), [&]<int J>() {
            bwd_weights_tap_block<T, B, J>(p, g, src, diff_dst, mine + ki * p.kw + kj, block.first,
                                           c, ki, kj);
          });
    });
  });
}

}  // namespace

bool DirectChwnSolver::applicable(const ConvProblem& problem, std::string* why) const {
  return conv_problem_well_formed(problem, why);
}

std::size_t DirectChwnSolver::workspace_bytes(const ConvProblem&, const TuneConfig&) const {
  return 0;
}

void DirectChwnSolver::run(const ConvProblem& p, const TuneConfig&, const ConvArgs& args,
                           Workspace) const {
  check_conv_args(p, args, Layout::CHWN);
  dispatch_dtype(p.dt, [&]<class T>() {
    switch (p.dir) {
      case Direction::fwd:
        direct_chwn_fwd<T, kChannelBlock>(p, args.src.data<T>(), args.wei.data<T>(),
                                          writable<T>(args.dst));
        return;
      case Direction::bwd_data:
        direct_chwn_bwd_data<T, kChannelBlock>(p, args.diff_dst.data<T>(), args.wei.data<T>(),
                                               writable<T>(args.diff_src));
        return;
      case Direction::bwd_weights:
        direct_chwn_bwd_weights<T, kChannelBlock, kTapBlock>(
            p, args.src.data<T>(), args.diff_dst.data<T>(), writable<T>(args.diff_wei));
        return;
    }
  });
}

}  // namespace tunecnn
