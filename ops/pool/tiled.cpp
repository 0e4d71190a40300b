// Coarsened pooling in NCHW, CHWN and NHWC: see tiled.h for what it does and why.
#include "ops/pool/tiled.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "ops/pool/row_scan.h"

namespace tunecnn {
namespace {

using namespace pool_tiled;

// The memory order of one layout, as planes of pixels of V contiguous values: value v of pixel
// (y, x) of plane i is at i * H * W * V + (y * W + x) * V + v, input and output alike.
struct View {
  std::int64_t planes;
  int v;
};

View view_of(const PoolProblem& p, Layout layout) {
  switch (layout) {
    case Layout::NCHW:
      return {static_cast<std::int64_t>(p.mb) * p.c, 1};
    case Layout::CHWN:
      return {p.c, p.mb};
    case Layout::NHWC:
      return {p.mb, p.c};
  }
  TUNECNN_FAIL("pool_tiled: unknown layout");
}

// A tile pass of one plane (forward, max and average backward) and the uncoarsened baseline,
// built on the window geometry (tile_windows.h) and the row scans (row_scan.h).
template <class T>
class Kernel : public RowScan<T> {
 public:
  using RowScan<T>::RowScan;

  // ---- forward -------------------------------------------------------------------------------
  // Writes the tile's outputs of one plane. acc holds ny * nx * V values, h nx * V.
  void fwd_tile(const T* in, T* out, const Tile& t, T* acc, T* h) const {
    const bool max = p_.kind == PoolKind::max;
    auto body = [&]<int kN>() {
      if (max)
        fwd_tile_impl<true, kN>(in, out, t, acc, h);
      else
        fwd_tile_impl<false, kN>(in, out, t, acc, h);
    };
    if (v_ == 1)
      with_width(t.nx, body);
    else
      body.template operator()<0>();
  }

  // ---- coarsening 1 with V = 1 ---------------------------------------------------------------
  // One output per step has nothing to share, so NCHW at fx = fy = 1 scans each window directly,
  // branch-free: the baseline the coarsened tiles are measured against.
  // Forward: output row oy of one plane.
  void fwd_single_row(const T* in, T* out, int oy) const {
    const Span wy = span(oy, p_.sh, p_.ph, p_.kh, p_.ih);
    const bool max = p_.kind == PoolKind::max;
    for (int ox = 0; ox < ow_; ++ox) {
      const Span wx = span(ox, p_.sw, p_.pw, p_.kw, p_.iw);
      T m = in[static_cast<std::int64_t>(wy.lo) * p_.iw + wx.lo];
      T sum = 0;
      for (int y = wy.lo; y < wy.hi; ++y) {
        const T* row = in + static_cast<std::int64_t>(y) * p_.iw;
        for (int x = wx.lo; x < wx.hi; ++x) {
          if (max)
            m = max_scalar(row[x], m);
          else
            sum += row[x];
        }
      }
      out[static_cast<std::int64_t>(oy) * ow_ + ox] = max ? m : sum / divisor(wy, wx);
    }
  }
  // Backward: every output of one plane in row-major order, as pool_direct adds them.
  void bwd_single_plane(const T* src, const T* dd, T* ds) const {
    const bool max = p_.kind == PoolKind::max;
    for (int oy = 0; oy < oh_; ++oy) {
      const Span wy = span(oy, p_.sh, p_.ph, p_.kh, p_.ih);
      for (int ox = 0; ox < ow_; ++ox) {
        const Span wx = span(ox, p_.sw, p_.pw, p_.kw, p_.iw);
        const T g = dd[static_cast<std::int64_t>(oy) * ow_ + ox];
        if (!max) {
          const T share = g / divisor(wy, wx);
          for (int y = wy.lo; y < wy.hi; ++y)
            for (int x = wx.lo; x < wx.hi; ++x) ds[static_cast<std::int64_t>(y) * p_.iw + x] += share;
          continue;
        }
        Idx<T> at = static_cast<Idx<T>>(wy.lo) * p_.iw + wx.lo;
        T m = src[at];
        for (int y = wy.lo; y < wy.hi; ++y)
          for (int x = wx.lo; x < wx.hi; ++x)
            argmax_scalar(src[static_cast<std::int64_t>(y) * p_.iw + x], m,
                          static_cast<Idx<T>>(y) * p_.iw + x, at);
        ds[at] += g;
      }
    }
  }

  // ---- max backward --------------------------------------------------------------------------
  // One row of tiles (all column tiles of output rows [oy0, oy0 + ny)) of one plane: the argmax of
  // every output first (idx: ny * ow * V pixel indices), then the gradients in row-major order,
  // pool_direct's order, so the sums round the same way.
  void max_bwd_rows(const T* src, const T* dd, T* ds, int oy0, int ny, int fx, Idx<T>* idx,
                    T* aval, T* hval, Idx<T>* hidx) const {
    const std::int64_t row_width = static_cast<std::int64_t>(ow_) * v_;
    for (int ox0 = 0; ox0 < ow_; ox0 += fx) {
      const Tile t{oy0, ny, ox0, std::min(fx, ow_ - ox0)};
      auto body = [&]<int kN>() { argmax_tile<kN>(src, t, idx, aval, hval, hidx); };
      if (v_ == 1)
        with_width(t.nx, body);
      else
        body.template operator()<0>();
    }
    const int v = v_, ow = ow_;
    for (int r = 0; r < ny; ++r) {
      const Idx<T>* __restrict ai = idx + r * row_width;
      const T* __restrict g = dd + static_cast<std::int64_t>(oy0 + r) * row_width;
      if (v == 1) {
        for (int ox = 0; ox < ow; ++ox) ds[ai[ox]] += g[ox];
        continue;
      }
      for (int ox = 0; ox < ow; ++ox) {
        const Idx<T>* __restrict ak = ai + static_cast<std::int64_t>(ox) * v;
        const T* __restrict gk = g + static_cast<std::int64_t>(ox) * v;
        for (int i = 0; i < v; ++i) ds[static_cast<std::int64_t>(ak[i]) * v + i] += gk[i];
      }
    }
  }

  // The argmax of every output of tile t into idx (rows of ow * V), aval as scratch.
  template <int kN>
  void argmax_tile(const T* src, const Tile& t, Idx<T>* idx, T* aval, T* hval,
                   Idx<T>* hidx) const {
    const std::int64_t row_width = static_cast<std::int64_t>(ow_) * v_;
    const int width = kN > 0 ? kN : t.nx * v_;  // kN > 0 only when V = 1
    const auto [ylo, yhi] = band(t);
    for (int y = ylo; y < yhi; ++y) {
      hargmax(src, y, t, hval, hidx);
      const auto [r0, r1] = rows_of(y, t);
      for (int r = r0; r < r1; ++r) {
        T* a = aval + static_cast<std::int64_t>(r) * width;
        Idx<T>* ai = idx + r * row_width + static_cast<std::int64_t>(t.ox0) * v_;
        if (y == first_row(t.oy0 + r)) {
          for (int i = 0; i < width; ++i) a[i] = hval[i], ai[i] = hidx[i];
        } else {
          fold_argmax(a, ai, hval, hidx, width);
        }
      }
    }
  }

  // ---- average backward ----------------------------------------------------------------------
  // Adds the tile's shares into ds: each output's share, summed per input row over the tile's
  // output rows whose window holds it, then spread over the row's window columns. share holds
  // ny * nx * V values, h nx * V.
  void avg_bwd_tile(const T* dd, T* ds, const Tile& t, T* share, T* h) const {
    const int v = v_, width = t.nx * v;
    for (int r = 0; r < t.ny; ++r) {
      const int oy = t.oy0 + r;
      const Span wy = span(oy, p_.sh, p_.ph, p_.kh, p_.ih);
      const T* g = dd + (static_cast<std::int64_t>(oy) * ow_ + t.ox0) * v;
      T* s = share + static_cast<std::int64_t>(r) * width;
      for (int j = 0; j < t.nx; ++j)
        divide(s + j * v, g + j * v, divisor(wy, span(t.ox0 + j, p_.sw, p_.pw, p_.kw, p_.iw)), v);
    }
    const auto [ylo, yhi] = band(t);
    for (int y = ylo; y < yhi; ++y) {
      const auto [r0, r1] = rows_of(y, t);
      if (r0 >= r1) continue;  // a row between windows (stride > window)
      const T* s0 = share + static_cast<std::int64_t>(r0) * width;
      std::copy(s0, s0 + width, h);
      for (int r = r0 + 1; r < r1; ++r) fold_sum(h, share + static_cast<std::int64_t>(r) * width, width);
      T* row = ds + static_cast<std::int64_t>(y) * p_.iw * v;
      for (int j = 0; j < t.nx; ++j) {
        const Span wx = span(t.ox0 + j, p_.sw, p_.pw, p_.kw, p_.iw);
        for (int x = wx.lo; x < wx.hi; ++x)
          fold_sum(row + static_cast<std::int64_t>(x) * v, h + j * v, v);
      }
    }
  }
 private:
  using TileWindows<T>::p_;
  using TileWindows<T>::v_;
  using TileWindows<T>::oh_;
  using TileWindows<T>::ow_;
  using TileWindows<T>::band;
  using TileWindows<T>::rows_of;
  using TileWindows<T>::first_row;
  using TileWindows<T>::divisor;
  using RowScan<T>::hargmax;

  template <bool kMax, int kN>
  void fwd_tile_impl(const T* in, T* out, const Tile& t, T* acc, T* h) const {
    const int v = v_;
    const int width = kN > 0 ? kN : t.nx * v;  // kN > 0 only when V = 1
    const auto [ylo, yhi] = band(t);
    for (int y = ylo; y < yhi; ++y) {
      this->template hreduce<kMax, kN>(in + static_cast<std::int64_t>(y) * p_.iw * v, t, h);
      const auto [r0, r1] = rows_of(y, t);
      for (int r = r0; r < r1; ++r) {
        T* a = acc + static_cast<std::int64_t>(r) * width;
        if (y == first_row(t.oy0 + r)) {
          for (int i = 0; i < width; ++i) a[i] = h[i];
        } else if constexpr (kMax) {
          fold_max(a, h, width);
        } else {
          fold_sum(a, h, width);
        }
      }
    }
    for (int r = 0; r < t.ny; ++r) {
      const int oy = t.oy0 + r;
      const T* a = acc + static_cast<std::int64_t>(r) * width;
      T* o = out + (static_cast<std::int64_t>(oy) * ow_ + t.ox0) * v;
      if constexpr (kMax) {
        for (int i = 0; i < width; ++i) o[i] = a[i];
      } else {
        const Span wy = span(oy, p_.sh, p_.ph, p_.kh, p_.ih);
        for (int j = 0; j < t.nx; ++j)
          divide(o + j * v, a + j * v, divisor(wy, span(t.ox0 + j, p_.sw, p_.pw, p_.kw, p_.iw)), v);
      }
    }
  }
};

int ceil_div(int a, int b) {
  return (a + b - 1) / b;
}

template <class T>
void run_typed(const PoolProblem& p, int fx, int fy, Layout layout, const PoolArgs& a) {
  const View view = view_of(p, layout);
  const int v = view.v, oh = p.oh(), ow = p.ow();
  const std::int64_t in_plane = static_cast<std::int64_t>(p.ih) * p.iw * v;
  const std::int64_t out_plane = static_cast<std::int64_t>(oh) * ow * v;
  const Kernel<T> kernel(p, v);
  const bool max = p.kind == PoolKind::max;
  const int tile_rows = ceil_div(oh, fy);
  const bool single = v == 1 && fx == 1 && fy == 1;  // coarsening 1 in NCHW
  const std::int64_t row_elems = static_cast<std::int64_t>(p.iw) * v;

  if (p.dir == Direction::fwd) {
    const T* src = a.src.data<T>();
    Tensor dst_handle = a.dst;  // PoolArgs is const, the storage it names is not
    T* dst = dst_handle.data<T>();
    const std::int64_t items = view.planes * tile_rows;
    const std::int64_t item_bytes = static_cast<std::int64_t>(fy) * p.sh * p.iw * v;
    const std::int64_t grain = std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(1, item_bytes));
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, items, grain),
                      [&](const tbb::blocked_range<std::int64_t>& range) {
                        std::vector<T> acc(static_cast<std::size_t>(fy) * fx * v), h(fx * v);
                        for (std::int64_t item = range.begin(); item < range.end(); ++item) {
                          const std::int64_t plane = item / tile_rows;
                          const int oy0 = static_cast<int>(item % tile_rows) * fy;
                          const int ny = std::min(fy, oh - oy0);
                          if (single) {
                            kernel.fwd_single_row(src + plane * in_plane, dst + plane * out_plane,
                                                  oy0);
                            continue;
                          }
                          for (int ox0 = 0; ox0 < ow; ox0 += fx)
                            kernel.fwd_tile(src + plane * in_plane, dst + plane * out_plane,
                                            Tile{oy0, ny, ox0, std::min(fx, ow - ox0)},
                                            acc.data(), h.data());
                        }
                      });
    return;
  }

  const T* diff_dst = a.diff_dst.data<T>();
  Tensor diff_src_handle = a.diff_src;
  T* diff_src = diff_src_handle.data<T>();
  const T* src = max ? a.src.data<T>() : nullptr;
  const std::int64_t grain = std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(1, in_plane));
  tbb::parallel_for(
      tbb::blocked_range<std::int64_t>(0, view.planes, grain),
      [&](const tbb::blocked_range<std::int64_t>& range) {
        std::vector<T> vals(static_cast<std::size_t>(fy) * fx * v), h(fx * v);
        std::vector<Idx<T>> idx, hidx;
        if (max) idx.resize(static_cast<std::size_t>(fy) * ow * v), hidx.resize(fx * v);
        for (std::int64_t plane = range.begin(); plane < range.end(); ++plane) {
          T* ds = diff_src + plane * in_plane;
          const T* dd = diff_dst + plane * out_plane;
          if (single) {
            std::fill(ds, ds + in_plane, T(0));
            kernel.bwd_single_plane(max ? src + plane * in_plane : nullptr, dd, ds);
            continue;
          }
          // Rows are zeroed just before the first tile row that adds into them, so the plane
          // is swept once while it is in cache rather than zeroed in a pass of its own.
          int zeroed = 0;
          auto zero_to = [&](int y) {
            if (y <= zeroed) return;
            std::fill(ds + static_cast<std::int64_t>(zeroed) * row_elems,
                      ds + static_cast<std::int64_t>(y) * row_elems, T(0));
            zeroed = y;
          };
          for (int oy0 = 0; oy0 < oh; oy0 += fy) {
            const int ny = std::min(fy, oh - oy0);
            zero_to(std::min((oy0 + ny - 1) * p.sh - p.ph + p.kh, p.ih));
            if (max) {
              kernel.max_bwd_rows(src + plane * in_plane, dd, ds, oy0, ny, fx, idx.data(),
                                  vals.data(), h.data(), hidx.data());
              continue;
            }
            for (int ox0 = 0; ox0 < ow; ox0 += fx)
              kernel.avg_bwd_tile(dd, ds, Tile{oy0, ny, ox0, std::min(fx, ow - ox0)},
                                  vals.data(), h.data());
          }
          zero_to(p.ih);  // rows below the last window
        }
      });
}

}  // namespace

bool TiledPoolSolver::applicable(const PoolProblem& problem, std::string* why) const {
  if (!runs_here(problem, why)) return false;
  if (problem.dir == Direction::bwd_weights) return reject(why, "pooling has no weights");
  return true;
}

std::vector<Layout> TiledPoolSolver::layouts(const PoolProblem&) const {
  return {Layout::NCHW, Layout::CHWN, Layout::NHWC};
}

std::vector<TuneConfig> TiledPoolSolver::configs(const PoolProblem& problem) const {
  std::vector<TuneConfig> configs;
  for (int fy : kPoolTileHeights) {
    if (fy > 1 && fy > problem.oh()) continue;
    for (int fx : kPoolTileWidths) {
      if (fx > 1 && fx > problem.ow()) continue;
      configs.push_back(TuneConfig{{{"fx", fx}, {"fy", fy}}});
    }
  }
  return configs;
}

void TiledPoolSolver::run(const PoolProblem& problem, const TuneConfig& config,
                          const PoolArgs& args) const {
  problem.validate();
  const int fx = config.get("fx", 1), fy = config.get("fy", 1);
  TUNECNN_CHECK(fx >= 1 && fy >= 1, "pool_tiled: bad config ", config.str(), " for ",
                problem.key());
  const Tensor& first = reads_src(problem) ? args.src : args.diff_dst;
  const Layout layout = first.defined() ? first.layout() : Layout::NCHW;
  const std::vector<Layout> accepted = layouts(problem);
  TUNECNN_CHECK(std::find(accepted.begin(), accepted.end(), layout) != accepted.end(),
                "pool_tiled does not run layout ", to_string(layout));
  check_args(problem, args, layout);
  dispatch_dtype(problem.dt,
                 [&]<class T>() { run_typed<T>(problem, fx, fy, layout, args); });
}

}  // namespace tunecnn
