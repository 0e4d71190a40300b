// Winograd's minimal filtering F(2x2, 3x3) (Lavin and Gray, "Fast Algorithms for Convolutional
// Neural Networks", CVPR 2016): U = G g G^T per (oc, ic), V = B^T d B per 4x4 input tile (stride
// 2), sixteen GEMMs M[xi] = U[xi] (oc x ic) x V[xi] (ic x tiles), Y = A^T m A per 2x2 output tile:
// 16 multiplies per 4 outputs instead of 36. bwd_data is the same forward algorithm on diff_dst
// with the kernel rotated 180 degrees, ic and oc swapped and padding 2 - p.
// Constraints: NCHW on the CPU, f32/f64, 3x3 kernel, stride 1, groups == 1, fwd and bwd_data
// (bwd_data: padding <= 2). Tunables: tiles: the most tiles per block, the GEMMs' n; blocks run
// one after another, each stage split over the cores (channels, then the 16 GEMMs, then channels).
#include "ops/conv/winograd_f2x3.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdint>

#include "ops/blas.h"
#include "ops/conv/args.h"

namespace tunecnn {
namespace {

// The tile loops store to (or load from) sixteen rows of V or M, too many streams for GCC's
// run-time alias checks; they never overlap, and saying so lets the loops vectorise.
#if defined(__clang__)
#define TUNECNN_NO_ALIAS _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define TUNECNN_NO_ALIAS _Pragma("GCC ivdep")
#else
#define TUNECNN_NO_ALIAS
#endif

// Blocks hold a multiple of this many tiles, so every row of V and M starts on a cache line.
constexpr int kTileQuantum = 16;
constexpr int kMinDefaultTiles = 64, kMaxDefaultTiles = 512, kMaxTiles = 1024;
// About one core's L2: what a block's V and M should fit in when U is small.
constexpr std::size_t kBlockCacheBytes = std::size_t{1} << 20;

// For a >= 0, b > 0.
int ceil_div(int a, int b) {
  return (a + b - 1) / b;
}

// Rounds toward minus infinity, unlike a / 2: tiles at the left edge start at negative columns.
int floor_half(int a) {
  return a >= 0 ? a / 2 : -((1 - a) / 2);
}

// Elements between consecutive xi planes of U, V or M. The transforms touch all sixteen planes at
// once; a multiple of 4 KiB apart, they would all fall into one L1 set and evict each other.
std::size_t plane_stride(std::size_t elements, std::size_t elem) {
  constexpr std::size_t kPage = 4096;
  const std::size_t bytes = elements * elem;
  if (bytes < kPage) return align_workspace(bytes) / elem;
  return ((bytes + kPage - 1) / kPage * kPage + kWorkspaceAlignment) / elem;
}

// The forward convolution really computed. For bwd_data it convolves diff_dst (oc channels,
// oh x ow) into diff_src (ic channels): a stride-1 conv's input gradient is a full correlation
// with the flipped kernel, i.e. padding kh - 1 - ph = 2 - ph.
struct Geometry {
  int c_in, c_out, h_in, w_in, h_out, w_out, pad_h, pad_w;
};

Geometry geometry(const ConvProblem& p) {
  if (p.dir == Direction::bwd_data)
    return {p.oc, p.ic, p.oh(), p.ow(), p.ih, p.iw, 2 - p.ph, 2 - p.pw};
  return {p.ic, p.oc, p.ih, p.iw, p.oh(), p.ow(), p.ph, p.pw};
}

int round_to_quantum(int tiles) {
  return ceil_div(tiles, kTileQuantum) * kTileQuantum;
}

// Each block re-reads (and BLAS re-packs) all of U; each tile of a block costs 16 (c_in + c_out)
// values of V and M. Blocks of c_in c_out / (c_in + c_out) tiles or more keep U's share of the
// traffic below V's and M's; when that is small, blocks grow until V and M would leave the cache.
int default_block_tiles(const ConvProblem& p) {
  const Geometry g = geometry(p);
  const std::size_t tile_bytes = std::size_t{16} * (g.c_in + g.c_out) * dtype_size(p.dt);
  const int cache_fit =
      static_cast<int>(std::min<std::size_t>(kMaxTiles, kBlockCacheBytes / tile_bytes));
  const int amortise = static_cast<int>(std::int64_t{g.c_in} * g.c_out / (g.c_in + g.c_out));
  return round_to_quantum(
      std::clamp(std::max(cache_fit, amortise), kMinDefaultTiles, kMaxDefaultTiles));
}

// Tiles numbered over the whole batch (image, tile row, tile column) are cut into equal blocks of
// block_tiles (the last may be shorter), run one after another through the same V and M.
// Workspace: [zero row][V][M][U], each region 64-byte aligned, each of V, M and U sixteen planes.
// U is always fully written, so it goes last and the workspace ends with its last element.
struct Blocking {
  Geometry g;
  int tiles_w, tiles_per_image, total_tiles, block_tiles, blocks;
  std::size_t v_plane, m_plane, u_plane;  // elements
  std::size_t zero_bytes, v_bytes, m_bytes, u_bytes;

  Blocking(const ConvProblem& p, const TuneConfig& config) : g(geometry(p)) {
    tiles_w = std::max(1, ceil_div(g.w_out, 2));
    tiles_per_image = std::max(1, ceil_div(g.h_out, 2)) * tiles_w;
    total_tiles = std::max(1, p.mb) * tiles_per_image;
    const int most =
        std::clamp(config.get("tiles", default_block_tiles(p)), kTileQuantum, kMaxTiles);
    const int count = ceil_div(total_tiles, most);
    block_tiles = std::min(total_tiles, round_to_quantum(ceil_div(total_tiles, count)));
    blocks = ceil_div(total_tiles, block_tiles);
    const std::size_t elem = dtype_size(p.dt);
    zero_bytes = align_workspace(static_cast<std::size_t>(g.w_in) * elem);
    v_plane = plane_stride(static_cast<std::size_t>(g.c_in) * block_tiles, elem);
    m_plane = plane_stride(static_cast<std::size_t>(g.c_out) * block_tiles, elem);
    const std::size_t u_elements = static_cast<std::size_t>(g.c_out) * g.c_in;
    u_plane = plane_stride(u_elements, elem);
    v_bytes = 16 * v_plane * elem;
    m_bytes = 16 * m_plane * elem;
    u_bytes = (15 * u_plane + u_elements) * elem;
  }
  std::size_t total_bytes() const { return zero_bytes + v_bytes + m_bytes + u_bytes; }

  template <class T>
  T* zero_row(Workspace ws) const {
    return ws.as<T>();
  }
  template <class T>
  T* v(Workspace ws) const {
    return reinterpret_cast<T*>(ws.as<char>() + zero_bytes);
  }
  template <class T>
  T* m(Workspace ws) const {
    return reinterpret_cast<T*>(ws.as<char>() + zero_bytes + v_bytes);
  }
  template <class T>
  T* u(Workspace ws) const {
    return reinterpret_cast<T*>(ws.as<char>() + zero_bytes + v_bytes + m_bytes);
  }
};

// U[xi] = (G g G^T)[xi] with G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1], stored at u[xi * stride].
template <class T>
inline void store_filter_tile(const T (&k)[3][3], T* u, std::size_t stride) {
  T gk[4][3];  // G g
  for (int j = 0; j < 3; ++j) {
    gk[0][j] = k[0][j];
    gk[1][j] = T(0.5) * (k[0][j] + k[1][j] + k[2][j]);
    gk[2][j] = T(0.5) * (k[0][j] - k[1][j] + k[2][j]);
    gk[3][j] = k[2][j];
  }
  for (int i = 0; i < 4; ++i) {
    u[(i * 4 + 0) * stride] = gk[i][0];
    u[(i * 4 + 1) * stride] = T(0.5) * (gk[i][0] + gk[i][1] + gk[i][2]);
    u[(i * 4 + 2) * stride] = T(0.5) * (gk[i][0] - gk[i][1] + gk[i][2]);
    u[(i * 4 + 3) * stride] = gk[i][2];
  }
}

// Transforms `count` <= kFilterRun filters into u[xi * stride + c]; filter c's taps start at
// w + c * step, in reverse order when `flip`. The taps are first gathered tap-major, so that the
// transform itself runs across filters in SIMD lanes.
constexpr int kFilterRun = 32;

template <class T>
void transform_filter_run(const T* w, std::size_t step, bool flip, int count, T* u,
                          std::size_t stride) {
  T taps[9][kFilterRun];
  for (int t = 0; t < 9; ++t) {
    const T* tap = w + (flip ? 8 - t : t);
    for (int c = 0; c < count; ++c) taps[t][c] = tap[c * step];
  }
  TUNECNN_NO_ALIAS
  for (int c = 0; c < count; ++c) {
    T k[3][3];
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) k[i][j] = taps[i * 3 + j][c];
    store_filter_tile(k, u + c, stride);
  }
}

// U[xi][co][ci]. Forward: g[co][ci] = wei[co][ci], so filter ci of row co sits 9 values after
// filter ci - 1. bwd_data: g[co][ci] = wei[ci][co] rotated by 180 degrees, c_out * 9 values after.
template <class T>
void transform_filters(const ConvProblem& p, const Geometry& g, const T* wei, T* u,
                       std::size_t stride) {
  const bool flip = p.dir == Direction::bwd_data;
  const std::size_t step = flip ? std::size_t{9} * g.c_out : 9;
  tbb::parallel_for(tbb::blocked_range<int>(0, g.c_out), [&](const tbb::blocked_range<int>& r) {
    for (int co = r.begin(); co < r.end(); ++co)
      for (int ci = 0; ci < g.c_in; ci += kFilterRun) {
        const std::size_t first = flip ? static_cast<std::size_t>(ci) * g.c_out + co
                                       : static_cast<std::size_t>(co) * g.c_in + ci;
        transform_filter_run(wei + first * 9, step, flip, std::min(kFilterRun, g.c_in - ci),
                             u + static_cast<std::size_t>(co) * g.c_in + ci, stride);
      }
  });
}

// V[xi] = (B^T d B)[xi], B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], stored at v[xi * stride].
template <class T>
inline void store_input_tile(const T (&d)[4][4], T* v, std::size_t stride) {
  T w[4][4];  // B^T d
  for (int j = 0; j < 4; ++j) {
    w[0][j] = d[0][j] - d[2][j];
    w[1][j] = d[1][j] + d[2][j];
    w[2][j] = d[2][j] - d[1][j];
    w[3][j] = d[1][j] - d[3][j];
  }
  for (int i = 0; i < 4; ++i) {
    v[(i * 4 + 0) * stride] = w[i][0] - w[i][2];
    v[(i * 4 + 1) * stride] = w[i][1] + w[i][2];
    v[(i * 4 + 2) * stride] = w[i][2] - w[i][1];
    v[(i * 4 + 3) * stride] = w[i][1] - w[i][3];
  }
}

// Y = A^T m A with A^T = [1 1 1 0; 0 1 -1 -1], m read from m[xi * stride].
template <class T>
inline void output_tile(const T* m, std::size_t stride, T (&y)[2][2]) {
  T s[2][4];  // A^T m
  for (int j = 0; j < 4; ++j) {
    const T m0 = m[j * stride], m1 = m[(4 + j) * stride];
    const T m2 = m[(8 + j) * stride], m3 = m[(12 + j) * stride];
    s[0][j] = m0 + m1 + m2;
    s[1][j] = m1 - m2 - m3;
  }
  for (int i = 0; i < 2; ++i) {
    y[i][0] = s[i][0] + s[i][1] + s[i][2];
    y[i][1] = s[i][1] - s[i][2] - s[i][3];
  }
}

// A run of tiles of one tile row inside a block: tiles tx0 .. tx0+len-1 of row ty of image n,
// at columns col0 .. col0+len-1 of the block's V and M.
struct Segment {
  int n, ty, tx0, len, col0;
};

template <class Fn>
void for_each_segment(const Blocking& b, int block, Fn&& fn) {
  const int first = block * b.block_tiles, last = std::min(b.total_tiles, first + b.block_tiles);
  for (int t = first; t < last;) {
    const int n = t / b.tiles_per_image, rest = t % b.tiles_per_image;
    const int ty = rest / b.tiles_w, tx = rest % b.tiles_w;
    const int len = std::min(b.tiles_w - tx, last - t);
    fn(Segment{n, ty, tx, len, t - first});
    t += len;
  }
}

// Transforms one segment of one input channel. Rows outside the image read the zero row, so
// only the tiles that cross the left or right edge need per-column checks.
template <class T>
void transform_input_segment(const Geometry& g, const T* plane, const T* zero_row, const Segment& s,
                             T* v, std::size_t stride) {
  const T* rows[4];
  for (int k = 0; k < 4; ++k) {
    const int y = 2 * s.ty - g.pad_h + k;
    rows[k] = y >= 0 && y < g.h_in ? plane + static_cast<std::size_t>(y) * g.w_in : zero_row;
  }
  // Tile x reads columns 2 (tx0 + x) - pad_w + [0, 4).
  const int c0 = 2 * s.tx0 - g.pad_w;
  const int lo = std::clamp(-floor_half(c0), 0, s.len);
  const int hi = std::clamp(floor_half(g.w_in - 4 - c0) + 1, lo, s.len);
  auto edge_tile = [&](int x) {
    T d[4][4];
    for (int k = 0; k < 4; ++k)
      for (int j = 0; j < 4; ++j) {
        const int c = c0 + 2 * x + j;
        d[k][j] = c >= 0 && c < g.w_in ? rows[k][c] : T(0);
      }
    store_input_tile(d, v + s.col0 + x, stride);
  };
  for (int x = 0; x < lo; ++x) edge_tile(x);
  TUNECNN_NO_ALIAS
  for (int x = lo; x < hi; ++x) {
    const int c = c0 + 2 * x;
    T d[4][4];
    for (int k = 0; k < 4; ++k)
      for (int j = 0; j < 4; ++j) d[k][j] = rows[k][c + j];
    store_input_tile(d, v + s.col0 + x, stride);
  }
  for (int x = hi; x < s.len; ++x) edge_tile(x);
}

// Writes one segment of one output channel; the last tile row and column may be half outside.
template <class T>
void transform_output_segment(const Geometry& g, const T* m, std::size_t stride, const Segment& s,
                              T* plane) {
  T* row0 = plane + static_cast<std::size_t>(2 * s.ty) * g.w_out + 2 * s.tx0;
  const bool two_rows = 2 * s.ty + 1 < g.h_out;
  T* row1 = two_rows ? row0 + g.w_out : row0;
  // Tiles whose two columns are both inside the output.
  const int full = std::min(s.len, g.w_out / 2 - s.tx0);
  m += s.col0;
  if (two_rows) {
    TUNECNN_NO_ALIAS
    for (int x = 0; x < full; ++x) {
      T y[2][2];
      output_tile(m + x, stride, y);
      row0[2 * x] = y[0][0];
      row0[2 * x + 1] = y[0][1];
      row1[2 * x] = y[1][0];
      row1[2 * x + 1] = y[1][1];
    }
  } else {
    TUNECNN_NO_ALIAS
    for (int x = 0; x < full; ++x) {
      T y[2][2];
      output_tile(m + x, stride, y);
      row0[2 * x] = y[0][0];
      row0[2 * x + 1] = y[0][1];
    }
  }
  for (int x = full; x < s.len; ++x) {
    T y[2][2];
    output_tile(m + x, stride, y);
    row0[2 * x] = y[0][0];
    if (two_rows) row1[2 * x] = y[1][0];
  }
}

// One block: its tiles' transforms (split over input channels), the sixteen GEMMs (split over
// xi, each one a single-threaded BLAS call that packs its U[xi] once), the inverse transforms
// (split over output channels). Every value is computed by one task in a fixed order, so the
// result does not depend on scheduling or on the number of cores.
template <class T>
void run_block(const Blocking& b, int block, const T* src, T* dst, const T* u, const T* zero_row,
               T* v, T* m) {
  const Geometry& g = b.g;
  const std::size_t in_plane = static_cast<std::size_t>(g.h_in) * g.w_in;
  const std::size_t out_plane = static_cast<std::size_t>(g.h_out) * g.w_out;
  tbb::parallel_for(0, g.c_in, [&](int ci) {
    T* v_row = v + static_cast<std::size_t>(ci) * b.block_tiles;
    for_each_segment(b, block, [&](const Segment& s) {
      const T* plane = src + (static_cast<std::size_t>(s.n) * g.c_in + ci) * in_plane;
      transform_input_segment(g, plane, zero_row, s, v_row, b.v_plane);
    });
  });
  const int tiles = std::min(b.block_tiles, b.total_tiles - block * b.block_tiles);
  tbb::parallel_for(0, 16, [&](int xi) {
    gemm_serial(false, false, g.c_out, tiles, g.c_in, T(1), u + xi * b.u_plane, g.c_in,
                v + xi * b.v_plane, b.block_tiles, T(0), m + xi * b.m_plane, b.block_tiles);
  });
  tbb::parallel_for(0, g.c_out, [&](int co) {
    const T* m_row = m + static_cast<std::size_t>(co) * b.block_tiles;
    for_each_segment(b, block, [&](const Segment& s) {
      T* plane = dst + (static_cast<std::size_t>(s.n) * g.c_out + co) * out_plane;
      transform_output_segment(g, m_row, b.m_plane, s, plane);
    });
  });
}

template <class T>
void run_typed(const ConvProblem& p, const Blocking& b, const ConvArgs& args, Workspace ws) {
  const bool fwd = p.dir == Direction::fwd;
  const T* src = fwd ? args.src.data<T>() : args.diff_dst.data<T>();
  T* dst = fwd ? writable<T>(args.dst) : writable<T>(args.diff_src);
  T* zero_row = b.zero_row<T>(ws);
  std::fill(zero_row, zero_row + b.g.w_in, T(0));
  T* u = b.u<T>(ws);
  transform_filters(p, b.g, args.wei.data<T>(), u, b.u_plane);
  for (int block = 0; block < b.blocks; ++block)
    run_block(b, block, src, dst, u, zero_row, b.v<T>(ws), b.m<T>(ws));
}

}  // namespace

bool WinogradF2x3Solver::applicable(const ConvProblem& p, std::string* why) const {
  if (!conv_problem_well_formed(p, why)) return false;
  if (p.g != 1) return reject(why, "winograd_f2x3 needs groups == 1");
  if (p.kh != 3 || p.kw != 3) return reject(why, "winograd_f2x3 needs a 3x3 kernel");
  if (p.sh != 1 || p.sw != 1) return reject(why, "winograd_f2x3 needs stride 1");
  if (p.dir == Direction::bwd_weights)
    return reject(why, "winograd_f2x3 computes fwd and bwd_data only, not bwd_weights");
  // bwd_data convolves with padding 2 - p, which must not be negative.
  if (p.dir == Direction::bwd_data && (p.ph > 2 || p.pw > 2))
    return reject(why, "winograd_f2x3 bwd_data needs padding <= 2");
  return true;
}

// The default first (it is what an untuned plan runs), then half and twice as many tiles, where
// they change the blocks.
std::vector<TuneConfig> WinogradF2x3Solver::configs(const ConvProblem& p) const {
  const int tiles = default_block_tiles(p);
  std::vector<TuneConfig> out;
  std::vector<int> block_sizes;
  for (int candidate : {tiles, tiles / 2, tiles * 2}) {
    TuneConfig config{{{"tiles", std::clamp(candidate, kTileQuantum, kMaxTiles)}}};
    const int block_tiles = Blocking(p, config).block_tiles;
    if (std::find(block_sizes.begin(), block_sizes.end(), block_tiles) != block_sizes.end())
      continue;
    block_sizes.push_back(block_tiles);
    out.push_back(std::move(config));
  }
  return out;
}

std::size_t WinogradF2x3Solver::workspace_bytes(const ConvProblem& p,
                                                const TuneConfig& config) const {
  return Blocking(p, config).total_bytes();
}

void WinogradF2x3Solver::run(const ConvProblem& p, const TuneConfig& config, const ConvArgs& args,
                             Workspace ws) const {
  check_conv_args(p, args, Layout::NCHW);
  std::string why;
  TUNECNN_CHECK(applicable(p, &why), why, ": ", p.key());
  const Blocking b(p, config);
  TUNECNN_CHECK(ws.bytes >= b.total_bytes(), "winograd_f2x3 needs ", b.total_bytes(),
                " workspace bytes, got ", ws.bytes, " for ", p.key());
  dispatch_dtype(p.dt, [&]<class T>() { run_typed<T>(p, b, args, ws); });
}

}  // namespace tunecnn
