// Coarsened pooling in NCHW, CHWN and NHWC: see tiled.h for what it does and why.
#include "ops/pool/tiled.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace tunecnn {
namespace {

// The index type kept beside a value in the argmax: as wide as the value, so both vectorise
// lane for lane.
template <class T>
using Idx = std::conditional_t<sizeof(T) == 8, std::int64_t, std::int32_t>;

// pool_direct's rule: v replaces the current maximum m when strictly greater, or when v is the
// first NaN. Bitwise operators keep the loops branch-free so they vectorise.
template <class T>
inline bool takes(T v, T m) {
  return (v > m) | ((v != v) & (m == m));
}

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

// One output's window along an axis, clipped to the input: [lo, hi).
struct Span {
  int lo, hi;
};
inline Span span(int o, int stride, int pad, int k, int in) {
  const int start = o * stride - pad;
  return {std::max(start, 0), std::min(start + k, in)};
}

struct Tile {
  int oy0, ny, ox0, nx;
};

template <class T>
class Kernel {
 public:
  Kernel(const PoolProblem& p, int v) : p_(p), v_(v), oh_(p.oh()), ow_(p.ow()) {}

  // ---- forward -------------------------------------------------------------------------------
  // Writes the tile's outputs of one plane. acc holds ny * nx * V values, h nx * V.
  void fwd_tile(const T* in, T* out, const Tile& t, T* acc, T* h) const {
    const bool max = p_.kind == PoolKind::max;
    const int width = t.nx * v_;
    const auto [ylo, yhi] = band(t);
    for (int y = ylo; y < yhi; ++y) {
      const T* row = in + static_cast<std::int64_t>(y) * p_.iw * v_;
      if (max)
        hreduce<true>(row, t, h);
      else
        hreduce<false>(row, t, h);
      for (int r = 0; r < t.ny; ++r) {
        const Span w = span(t.oy0 + r, p_.sh, p_.ph, p_.kh, p_.ih);
        if (y < w.lo || y >= w.hi) continue;
        T* a = acc + static_cast<std::int64_t>(r) * width;
        if (y == w.lo) {
          std::copy(h, h + width, a);
        } else if (max) {
          for (int i = 0; i < width; ++i) a[i] = takes(h[i], a[i]) ? h[i] : a[i];
        } else {
          for (int i = 0; i < width; ++i) a[i] += h[i];
        }
      }
    }
    for (int r = 0; r < t.ny; ++r) {
      const int oy = t.oy0 + r;
      const T* a = acc + static_cast<std::int64_t>(r) * width;
      T* o = out + (static_cast<std::int64_t>(oy) * ow_ + t.ox0) * v_;
      if (max) {
        std::copy(a, a + width, o);
        continue;
      }
      const Span wy = span(oy, p_.sh, p_.ph, p_.kh, p_.ih);
      for (int j = 0; j < t.nx; ++j) {
        const T d = divisor(wy, span(t.ox0 + j, p_.sw, p_.pw, p_.kw, p_.iw));
        const T* aj = a + j * v_;
        T* oj = o + j * v_;
        for (int i = 0; i < v_; ++i) oj[i] = aj[i] / d;
      }
    }
  }

  // ---- max backward --------------------------------------------------------------------------
  // One row of tiles (all column tiles of output rows [oy0, oy0 + ny)) of one plane: the argmax of
  // every output first (idx: ny * ow * V pixel indices), then the gradients in row-major order.
  void max_bwd_rows(const T* src, const T* dd, T* ds, int oy0, int ny, int fx, Idx<T>* idx,
                    T* aval, T* hval, Idx<T>* hidx) const {
    const std::int64_t row_width = static_cast<std::int64_t>(ow_) * v_;
    for (int ox0 = 0; ox0 < ow_; ox0 += fx) {
      const Tile t{oy0, ny, ox0, std::min(fx, ow_ - ox0)};
      const int width = t.nx * v_;
      const auto [ylo, yhi] = band(t);
      for (int y = ylo; y < yhi; ++y) {
        hargmax(src, y, t, hval, hidx);
        for (int r = 0; r < t.ny; ++r) {
          const Span w = span(t.oy0 + r, p_.sh, p_.ph, p_.kh, p_.ih);
          if (y < w.lo || y >= w.hi) continue;
          T* a = aval + static_cast<std::int64_t>(r) * width;
          Idx<T>* ai = idx + r * row_width + static_cast<std::int64_t>(ox0) * v_;
          if (y == w.lo) {
            std::copy(hval, hval + width, a);
            std::copy(hidx, hidx + width, ai);
            continue;
          }
          for (int i = 0; i < width; ++i) {
            const bool take = takes(hval[i], a[i]);
            a[i] = take ? hval[i] : a[i];
            ai[i] = take ? hidx[i] : ai[i];
          }
        }
      }
    }
    for (int r = 0; r < ny; ++r) {
      const Idx<T>* ai = idx + r * row_width;
      const T* g = dd + static_cast<std::int64_t>(oy0 + r) * row_width;
      if (v_ == 1) {
        for (int ox = 0; ox < ow_; ++ox) ds[ai[ox]] += g[ox];
        continue;
      }
      for (int ox = 0; ox < ow_; ++ox)
        for (int i = 0; i < v_; ++i) {
          const std::int64_t k = static_cast<std::int64_t>(ox) * v_ + i;
          ds[static_cast<std::int64_t>(ai[k]) * v_ + i] += g[k];
        }
    }
  }

  // ---- average backward ----------------------------------------------------------------------
  // Adds the tile's shares into ds. share holds ny * nx * V values, h nx * V.
  void avg_bwd_tile(const T* dd, T* ds, const Tile& t, T* share, T* h) const {
    const int width = t.nx * v_;
    for (int r = 0; r < t.ny; ++r) {
      const int oy = t.oy0 + r;
      const Span wy = span(oy, p_.sh, p_.ph, p_.kh, p_.ih);
      const T* g = dd + (static_cast<std::int64_t>(oy) * ow_ + t.ox0) * v_;
      T* s = share + static_cast<std::int64_t>(r) * width;
      for (int j = 0; j < t.nx; ++j) {
        const T d = divisor(wy, span(t.ox0 + j, p_.sw, p_.pw, p_.kw, p_.iw));
        for (int i = 0; i < v_; ++i) s[j * v_ + i] = g[j * v_ + i] / d;
      }
    }
    const auto [ylo, yhi] = band(t);
    for (int y = ylo; y < yhi; ++y) {
      bool any = false;
      for (int r = 0; r < t.ny; ++r) {
        const Span w = span(t.oy0 + r, p_.sh, p_.ph, p_.kh, p_.ih);
        if (y < w.lo || y >= w.hi) continue;
        const T* s = share + static_cast<std::int64_t>(r) * width;
        if (!any)
          std::copy(s, s + width, h);
        else
          for (int i = 0; i < width; ++i) h[i] += s[i];
        any = true;
      }
      if (!any) continue;  // a row between windows (stride > window)
      T* row = ds + static_cast<std::int64_t>(y) * p_.iw * v_;
      for (int j = 0; j < t.nx; ++j) {
        const Span wx = span(t.ox0 + j, p_.sw, p_.pw, p_.kw, p_.iw);
        const T* hj = h + j * v_;
        for (int x = wx.lo; x < wx.hi; ++x) {
          T* px = row + static_cast<std::int64_t>(x) * v_;
          for (int i = 0; i < v_; ++i) px[i] += hj[i];
        }
      }
    }
  }

 private:
  const PoolProblem& p_;
  int v_, oh_, ow_;

  // Input rows [lo, hi) some output row of the tile reads.
  Span band(const Tile& t) const {
    return {span(t.oy0, p_.sh, p_.ph, p_.kh, p_.ih).lo,
            span(t.oy0 + t.ny - 1, p_.sh, p_.ph, p_.kh, p_.ih).hi};
  }

  T divisor(const Span& wy, const Span& wx) const {
    return static_cast<T>(p_.count_include_pad ? p_.kh * p_.kw : (wy.hi - wy.lo) * (wx.hi - wx.lo));
  }

  // h[j * V + i] = max or sum of row's window of output column ox0 + j, value i.
  template <bool kMax>
  void hreduce(const T* row, const Tile& t, T* h) const {
    if (v_ == 1) {
      // Columns whose window lies inside the row vectorise over j; the rest are clipped.
      int ja = 0, jb = t.nx;
      while (ja < jb && (t.ox0 + ja) * p_.sw - p_.pw < 0) ++ja;
      while (jb > ja && (t.ox0 + jb - 1) * p_.sw - p_.pw + p_.kw > p_.iw) --jb;
      for (int j = 0; j < ja; ++j) h[j] = hclipped<kMax>(row, t.ox0 + j);
      for (int j = jb; j < t.nx; ++j) h[j] = hclipped<kMax>(row, t.ox0 + j);
      if (jb > ja) {
        const T* base = row + (t.ox0 + ja) * p_.sw - p_.pw;
        T* hh = h + ja;
        const int n = jb - ja;
        if (p_.sw == 1)
          hinterior<kMax, 1>(base, hh, n, 1);
        else if (p_.sw == 2)
          hinterior<kMax, 2>(base, hh, n, 2);
        else
          hinterior<kMax, 0>(base, hh, n, p_.sw);
      }
      return;
    }
    for (int j = 0; j < t.nx; ++j) {
      const Span wx = span(t.ox0 + j, p_.sw, p_.pw, p_.kw, p_.iw);
      T* hj = h + j * v_;
      const T* first = row + static_cast<std::int64_t>(wx.lo) * v_;
      std::copy(first, first + v_, hj);
      for (int x = wx.lo + 1; x < wx.hi; ++x) {
        const T* px = row + static_cast<std::int64_t>(x) * v_;
        if constexpr (kMax) {
          for (int i = 0; i < v_; ++i) hj[i] = takes(px[i], hj[i]) ? px[i] : hj[i];
        } else {
          for (int i = 0; i < v_; ++i) hj[i] += px[i];
        }
      }
    }
  }

  // V = 1, windows inside the row: h[j] = reduce over kx of base[j * stride + kx]. kStride is the
  // stride when known at compile time (0: use `stride`).
  template <bool kMax, int kStride>
  void hinterior(const T* base, T* h, int n, int stride) const {
    const int s = kStride > 0 ? kStride : stride;
    for (int j = 0; j < n; ++j) h[j] = base[j * s];
    for (int kx = 1; kx < p_.kw; ++kx) {
      const T* b = base + kx;
      if constexpr (kMax) {
        for (int j = 0; j < n; ++j) h[j] = takes(b[j * s], h[j]) ? b[j * s] : h[j];
      } else {
        for (int j = 0; j < n; ++j) h[j] += b[j * s];
      }
    }
  }

  template <bool kMax>
  T hclipped(const T* row, int ox) const {
    const Span wx = span(ox, p_.sw, p_.pw, p_.kw, p_.iw);
    T m = row[wx.lo];
    for (int x = wx.lo + 1; x < wx.hi; ++x) {
      if constexpr (kMax)
        m = takes(row[x], m) ? row[x] : m;
      else
        m += row[x];
    }
    return m;
  }

  // The first maximum of row y's window of each output column of the tile, with its pixel index.
  void hargmax(const T* src, int y, const Tile& t, T* hval, Idx<T>* hidx) const {
    const T* row = src + static_cast<std::int64_t>(y) * p_.iw * v_;
    const Idx<T> base = static_cast<Idx<T>>(y) * p_.iw;
    for (int j = 0; j < t.nx; ++j) {
      const Span wx = span(t.ox0 + j, p_.sw, p_.pw, p_.kw, p_.iw);
      T* hv = hval + j * v_;
      Idx<T>* hi = hidx + j * v_;
      const T* first = row + static_cast<std::int64_t>(wx.lo) * v_;
      for (int i = 0; i < v_; ++i) hv[i] = first[i], hi[i] = base + wx.lo;
      for (int x = wx.lo + 1; x < wx.hi; ++x) {
        const T* px = row + static_cast<std::int64_t>(x) * v_;
        const Idx<T> cand = base + x;
        for (int i = 0; i < v_; ++i) {
          const bool take = takes(px[i], hv[i]);
          hv[i] = take ? px[i] : hv[i];
          hi[i] = take ? cand : hi[i];
        }
      }
    }
  }
};

void check_arg(const Tensor& t, const Shape& shape, DType dt, Layout layout, const char* role,
               const PoolProblem& p) {
  TUNECNN_CHECK(t.defined() && t.shape() == shape && t.dtype() == dt && t.layout() == layout,
                "pool_tiled ", role, " ", t.defined() ? t.describe() : "undefined",
                " does not fit ", p.key(), " in ", to_string(layout));
}

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
          std::fill(ds, ds + in_plane, T(0));
          for (int oy0 = 0; oy0 < oh; oy0 += fy) {
            const int ny = std::min(fy, oh - oy0);
            if (max) {
              kernel.max_bwd_rows(src + plane * in_plane, dd, ds, oy0, ny, fx, idx.data(),
                                  vals.data(), h.data(), hidx.data());
              continue;
            }
            for (int ox0 = 0; ox0 < ow; ox0 += fx)
              kernel.avg_bwd_tile(dd, ds, Tile{oy0, ny, ox0, std::min(fx, ow - ox0)},
                                  vals.data(), h.data());
          }
        }
      });
}

}  // namespace

bool TiledPoolSolver::applicable(const PoolProblem& problem, std::string* why) const {
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
  const bool needs_src = problem.dir == Direction::fwd || problem.kind == PoolKind::max;
  const Tensor& first = needs_src ? args.src : args.diff_dst;
  const Layout layout = first.defined() ? first.layout() : Layout::NCHW;
  const std::vector<Layout> accepted = layouts(problem);
  TUNECNN_CHECK(std::find(accepted.begin(), accepted.end(), layout) != accepted.end(),
                "pool_tiled does not run layout ", to_string(layout));
  if (needs_src) check_arg(args.src, problem.src_shape(), problem.dt, layout, "src", problem);
  if (problem.dir == Direction::fwd) {
    check_arg(args.dst, problem.dst_shape(), problem.dt, layout, "dst", problem);
  } else {
    check_arg(args.diff_dst, problem.dst_shape(), problem.dt, layout, "diff_dst", problem);
    check_arg(args.diff_src, problem.src_shape(), problem.dt, layout, "diff_src", problem);
  }
  dispatch_dtype(problem.dt,
                 [&]<class T>() { run_typed<T>(problem, fx, fy, layout, args); });
}

}  // namespace tunecnn
