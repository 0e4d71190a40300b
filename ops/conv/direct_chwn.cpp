// Direct convolution on CHWN activations with the batch in the SIMD lanes: cuda-convnet's layout
// and loop order (Li et al., SC'16, shared/PAPERS.md sec. 2). Memory is [c][h][w][n], so the N
// images of one pixel are one run of vectors; each weight is broadcast once and multiplied into
// all of them, and a register block of several channels x up to 4 vectors reuses every load.
// Constraints: CHWN activations on the CPU, f32/f64; any batch, stride, padding and groups.
// Tunables: "ob", channels per register block (4 or 8). Batches that are not a multiple of the
// vector width finish with half and quarter vectors and single lanes, so no load is masked.
// TBB splits over outputs that tasks write disjointly, so results never depend on scheduling.
#include "ops/conv/direct_chwn.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "ops/conv/args.h"

namespace tunecnn {
namespace {

#if defined(__AVX512F__)
constexpr int kVectorBytes = 64;
#else
constexpr int kVectorBytes = 32;
#endif

// GCC/Clang vector extension: L lanes of T; arithmetic with a scalar broadcasts it.
template <class T, int L>
struct VecOf {
  typedef T type __attribute__((vector_size(L * sizeof(T))));
};
template <class T, int L>
using Vec = typename VecOf<T, L>::type;

// Fixed-size memcpy compiles to one unaligned vector load or store.
template <class T, int L>
Vec<T, L> load(const T* p) {
  Vec<T, L> v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
template <class T, int L>
void store(T* p, const Vec<T, L>& v) {
  std::memcpy(p, &v, sizeof(v));
}
template <class T, int L>
T lane_sum(const Vec<T, L>& v) {
  T sum = 0;
  for (int i = 0; i < L; ++i) sum += v[i];
  return sum;
}

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

// Channels [first, first + size) of one group; size is the register block or 1 for the rest.
struct ChannelBlock {
  int first, size;
};

std::vector<ChannelBlock> channel_blocks(int channels, int per_group, int block) {
  std::vector<ChannelBlock> blocks;
  for (int start = 0; start < channels; start += per_group) {
    int c = start;
    for (; c + block <= start + per_group; c += block) blocks.push_back({c, block});
    for (; c < start + per_group; ++c) blocks.push_back({c, 1});
  }
  return blocks;
}

// Calls f.template operator()<B>() with B = the block's size, known at compile time.
template <int Block, class F>
void with_block_size(int size, F&& f) {
  if (size == Block)
    f.template operator()<Block>();
  else
    f.template operator()<1>();
}

struct Range {
  int lo, hi;  // [lo, hi)
};

// Kernel taps k whose input pos * stride - pad + k lies in [0, in).
Range taps_inside(int pos, int stride, int pad, int k, int in) {
  const int base = pos * stride - pad;
  return {std::max(0, -base), std::min(k, in - base)};
}

// Kernel taps k through which input pos reaches an output o = (pos + pad - k) / stride in
// [0, out); they step by the stride, from lo (congruent to pos + pad) to below hi.
Range taps_reaching(int pos, int stride, int pad, int k, int out) {
  const int t = pos + pad;  // = o * stride + k
  const int lo = std::max(0, t - (out - 1) * stride), hi = std::min(k - 1, t);
  if (lo > hi) return {0, 0};
  return {lo + (t - lo) % stride, hi + 1};
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

// dst[o0 + b][y][x][n0 : n0 + L * LB] for b < OB and every x of row y.
template <class T, int L, int LB, int OB>
void fwd_row(const ConvProblem& p, const Geometry& g, const T* src, const T* wei, T* dst, int o0,
             int y, int n0) {
  const int c_first = o0 / g.ocg * g.icg;
  const Range rows = taps_inside(y, p.sh, p.ph, p.kh, p.ih);
  for (int x = 0; x < g.ow; ++x) {
    const Range cols = taps_inside(x, p.sw, p.pw, p.kw, p.iw);
    Vec<T, L> acc[OB][LB] = {};
    for (int c = 0; c < g.icg; ++c) {
      const T* w = wei + o0 * g.wei_o + c * g.wei_c;
      const T* plane = src + (c_first + c) * g.src_plane + n0;
      for (int ki = rows.lo; ki < rows.hi; ++ki) {
        const int iy = y * p.sh - p.ph + ki, ix = x * p.sw - p.pw + cols.lo;
        const T* in = plane + (static_cast<std::size_t>(iy) * p.iw + ix) * g.n;
        for (int kj = cols.lo; kj < cols.hi; ++kj, in += g.n) {
          Vec<T, L> v[LB];
          for (int l = 0; l < LB; ++l) v[l] = load<T, L>(in + l * L);
          for (int b = 0; b < OB; ++b) {
            const T weight = w[b * g.wei_o + ki * p.kw + kj];
            for (int l = 0; l < LB; ++l) acc[b][l] += weight * v[l];
          }
        }
      }
    }
    T* out = dst + o0 * g.dst_plane + (static_cast<std::size_t>(y) * g.ow + x) * g.n + n0;
    for (int b = 0; b < OB; ++b)
      for (int l = 0; l < LB; ++l) store<T, L>(out + b * g.dst_plane + l * L, acc[b][l]);
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
      for_each_lane_block<T>(g.n, [&]<int L, int LB>(int n0) {
        fwd_row<T, L, LB, B>(p, g, src, wei, dst, block.first, y, n0);
      });
    });
  });
}

// The gather form: diff_src[c0 + b][iy][ix][n0 : n0 + L * LB] for b < CB and every ix of row
// iy, summed over the outputs of the group that read it.
template <class T, int L, int LB, int CB>
void bwd_data_row(const ConvProblem& p, const Geometry& g, const T* diff_dst, const T* wei,
                  T* diff_src, int c0, int iy, int n0) {
  const int group = c0 / g.icg, c = c0 % g.icg;
  const Range rows = taps_reaching(iy, p.sh, p.ph, p.kh, g.oh);
  for (int ix = 0; ix < p.iw; ++ix) {
    const Range cols = taps_reaching(ix, p.sw, p.pw, p.kw, g.ow);
    Vec<T, L> acc[CB][LB] = {};
    for (int o = group * g.ocg; o < (group + 1) * g.ocg; ++o) {
      const T* w = wei + o * g.wei_o + c * g.wei_c;
      const T* plane = diff_dst + o * g.dst_plane + n0;
      for (int ki = rows.lo; ki < rows.hi; ki += p.sh) {
        const int y = (iy + p.ph - ki) / p.sh;
        for (int kj = cols.lo; kj < cols.hi; kj += p.sw) {
          const int x = (ix + p.pw - kj) / p.sw;
          const T* in = plane + (static_cast<std::size_t>(y) * g.ow + x) * g.n;
          Vec<T, L> v[LB];
          for (int l = 0; l < LB; ++l) v[l] = load<T, L>(in + l * L);
          for (int b = 0; b < CB; ++b) {
            const T weight = w[b * g.wei_c + ki * p.kw + kj];
            for (int l = 0; l < LB; ++l) acc[b][l] += weight * v[l];
          }
        }
      }
    }
    T* out = diff_src + c0 * g.src_plane + (static_cast<std::size_t>(iy) * p.iw + ix) * g.n + n0;
    for (int b = 0; b < CB; ++b)
      for (int l = 0; l < LB; ++l) store<T, L>(out + b * g.src_plane + l * L, acc[b][l]);
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
      for_each_lane_block<T>(g.n, [&]<int L, int LB>(int n0) {
        bwd_data_row<T, L, LB, B>(p, g, diff_dst, wei, diff_src, block.first, iy, n0);
      });
    });
  });
}

// For one tap (ki, kj): sums[b][cb] += the sum over the outputs (y, x) that read an input inside
// the image and over images [n0, n0 + L * count) of diff_dst[o0 + b][y][x][n] * src[c0 +
// cb][iy][ix][n]. The lanes stay separate partial sums until the end.
template <class T, int L, int OB, int CB>
void bwd_weights_tap(const ConvProblem& p, const Geometry& g, const T* src, const T* diff_dst,
                     int o0, int c0, int ki, int kj, int n0, int count, T (&sums)[OB][CB]) {
  const Range ys = outputs_reading(ki, p.sh, p.ph, p.ih, g.oh);
  const Range xs = outputs_reading(kj, p.sw, p.pw, p.iw, g.ow);
  Vec<T, L> acc[OB][CB] = {};
  for (int y = ys.lo; y < ys.hi; ++y) {
    const int iy = y * p.sh - p.ph + ki;
    for (int x = xs.lo; x < xs.hi; ++x) {
      const int ix = x * p.sw - p.pw + kj;
      const T* d = diff_dst + o0 * g.dst_plane + (static_cast<std::size_t>(y) * g.ow + x) * g.n;
      const T* s = src + c0 * g.src_plane + (static_cast<std::size_t>(iy) * p.iw + ix) * g.n;
      for (int n = n0; n < n0 + count * L; n += L) {
        Vec<T, L> dv[OB], sv[CB];
        for (int b = 0; b < OB; ++b) dv[b] = load<T, L>(d + b * g.dst_plane + n);
        for (int cb = 0; cb < CB; ++cb) sv[cb] = load<T, L>(s + cb * g.src_plane + n);
        for (int b = 0; b < OB; ++b)
          for (int cb = 0; cb < CB; ++cb) acc[b][cb] += dv[b] * sv[cb];
      }
    }
  }
  for (int b = 0; b < OB; ++b)
    for (int cb = 0; cb < CB; ++cb) sums[b][cb] += lane_sum<T, L>(acc[b][cb]);
}

// Every tap of diff_wei[o0 : o0 + OB][c : c + CB], c = c0's index inside its group.
template <class T, int OB, int CB>
void bwd_weights_block(const ConvProblem& p, const Geometry& g, const T* src, const T* diff_dst,
                       T* diff_wei, int o0, int c0) {
  for (int ki = 0; ki < p.kh; ++ki)
    for (int kj = 0; kj < p.kw; ++kj) {
      T sums[OB][CB] = {};
      for_each_lane_run<T>(g.n, [&]<int L>(int n0, int count) {
        bwd_weights_tap<T, L, OB, CB>(p, g, src, diff_dst, o0, c0, ki, kj, n0, count, sums);
      });
      T* out = diff_wei + o0 * g.wei_o + (c0 % g.icg) * g.wei_c + ki * p.kw + kj;
      for (int b = 0; b < OB; ++b)
        for (int cb = 0; cb < CB; ++cb) out[b * g.wei_o + cb * g.wei_c] = sums[b][cb];
    }
}

// One task per (output channel block, input channel block of its group): it owns those weights.
template <class T, int OB>
void direct_chwn_bwd_weights(const ConvProblem& p, const T* src, const T* diff_dst,
                             T* diff_wei) {
  const Geometry g(p);
  const std::vector<ChannelBlock> o_blocks = channel_blocks(p.oc, g.ocg, OB);
  const std::vector<ChannelBlock> c_blocks = channel_blocks(g.icg, g.icg, OB);
  const int per_o = static_cast<int>(c_blocks.size());
  tbb::parallel_for(0, static_cast<int>(o_blocks.size()) * per_o, [&](int task) {
    const ChannelBlock ob = o_blocks[task / per_o], cb = c_blocks[task % per_o];
    const int c0 = ob.first / g.ocg * g.icg + cb.first;
    with_block_size<OB>(ob.size, [&]<int BO>() {
      with_block_size<OB>(cb.size, [&]<int BC>() {
        bwd_weights_block<T, BO, BC>(p, g, src, diff_dst, diff_wei, ob.first, c0);
      });
    });
  });
}

}  // namespace

bool DirectChwnSolver::applicable(const ConvProblem& problem, std::string* why) const {
  if (!conv_problem_well_formed(problem, why)) return false;
  return true;
}

std::vector<TuneConfig> DirectChwnSolver::configs(const ConvProblem&) const {
  return {TuneConfig{{{"ob", 4}}}};
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
        direct_chwn_fwd<T, 4>(p, args.src.data<T>(), args.wei.data<T>(), writable<T>(args.dst));
        return;
      case Direction::bwd_data:
        direct_chwn_bwd_data<T, 4>(p, args.diff_dst.data<T>(), args.wei.data<T>(),
                                   writable<T>(args.diff_src));
        return;
      case Direction::bwd_weights:
        direct_chwn_bwd_weights<T, 4>(p, args.src.data<T>(), args.diff_dst.data<T>(),
                                      writable<T>(args.diff_wei));
        return;
    }
  });
}

}  // namespace tunecnn
