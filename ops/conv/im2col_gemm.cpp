// im2col + GEMM (Chellapilla et al. 2006; Caffe's convolution): each image's receptive fields are
// copied into a (ic/g*kh*kw) x (oh*ow) column matrix so every group is one row-major GEMM:
// fwd dst = W x col, bwd_data col = W^T x dO then col2im, bwd_weights dW += dO x col^T.
// Constraints: NCHW on the CPU, f32/f64, any stride, padding and groups. Tunables: none.
// Images are split over P = min(TBB concurrency, mb) fixed slots, each with its own column buffer
// and (bwd_weights) its own dW partial, summed in slot order so results are deterministic.
// A 1x1, stride-1, unpadded kernel needs no column buffer: the image already is that matrix.
#include "ops/conv/im2col_gemm.h"

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>

#include "ops/blas.h"
#include "ops/conv/args.h"

namespace tunecnn {
namespace {

constexpr std::size_t kSliceAlignment = 64;  // slots never share a cache line

std::size_t align_up(std::size_t bytes) {
  return (bytes + kSliceAlignment - 1) / kSliceAlignment * kSliceAlignment;
}

// The shape of the lowered problem and of its workspace, shared by run and workspace_bytes.
struct Lowering {
  int icg, ocg, k, ohw, slots;
  bool image_is_col;
  std::size_t col_bytes, partial_bytes;  // per slot, aligned; partials only for bwd_weights

  explicit Lowering(const ConvProblem& p)
      : icg(p.ic / p.g),
        ocg(p.oc / p.g),
        k(icg * p.kh * p.kw),
        ohw(p.oh() * p.ow()),
        slots(std::min(tbb::this_task_arena::max_concurrency(), p.mb)),
        image_is_col(p.kh == 1 && p.kw == 1 && p.sh == 1 && p.sw == 1 && p.ph == 0 && p.pw == 0) {
    const std::size_t elem = dtype_size(p.dt);
    col_bytes = image_is_col ? 0 : align_up(static_cast<std::size_t>(k) * ohw * elem);
    partial_bytes =
        p.dir == Direction::bwd_weights ? align_up(static_cast<std::size_t>(p.oc) * k * elem) : 0;
  }
  // Slot 0 accumulates straight into diff_wei, so only the other slots need a partial.
  std::size_t total_bytes() const { return slots * col_bytes + (slots - 1) * partial_bytes; }
  template <class T>
  T* col(Workspace ws, int slot) const {
    return reinterpret_cast<T*>(ws.as<char>() + slot * col_bytes);
  }
  template <class T>
  T* partial(Workspace ws, int slot) const {
    return reinterpret_cast<T*>(ws.as<char>() + slots * col_bytes + (slot - 1) * partial_bytes);
  }
};

// The output columns x whose input column x*sw - pw + kj lies inside [0, iw).
struct ColumnRange {
  int lo, hi;
};

ColumnRange valid_columns(const ConvProblem& p, int kj, int ow) {
  const int first = p.pw - kj, last = p.iw - 1 + p.pw - kj;
  const int lo = first <= 0 ? 0 : (first + p.sw - 1) / p.sw;
  const int hi = last < 0 ? 0 : std::min(ow, last / p.sw + 1);
  return {std::min(lo, ow), std::max(hi, std::min(lo, ow))};
}

// Rows are (c, ki, kj); each row holds oh runs of ow values, copied contiguously for stride 1.
template <class T>
void im2col(const ConvProblem& p, int icg, const T* src, T* col) {
  const int oh = p.oh(), ow = p.ow();
  for (int c = 0; c < icg; ++c) {
    const T* plane = src + static_cast<std::size_t>(c) * p.ih * p.iw;
    for (int ki = 0; ki < p.kh; ++ki)
      for (int kj = 0; kj < p.kw; ++kj) {
        const ColumnRange r = valid_columns(p, kj, ow);
        for (int y = 0; y < oh; ++y, col += ow) {
          const int iy = y * p.sh - p.ph + ki;
          if (iy < 0 || iy >= p.ih) {
            std::fill(col, col + ow, T(0));
            continue;
          }
          // Rows are short (tens of values): inline loops beat memcpy/memset calls here.
          const T* in = plane + iy * p.iw;
          const int shift = kj - p.pw;
          for (int x = 0; x < r.lo; ++x) col[x] = T(0);
          if (p.sw == 1) {
            for (int x = r.lo; x < r.hi; ++x) col[x] = in[x + shift];
          } else {
            for (int x = r.lo; x < r.hi; ++x) col[x] = in[x * p.sw + shift];
          }
          for (int x = r.hi; x < ow; ++x) col[x] = T(0);
        }
      }
  }
}

// The adjoint of im2col: adds every column entry back onto the input pixel it was copied from.
template <class T>
void col2im_add(const ConvProblem& p, int icg, const T* col, T* src) {
  const int oh = p.oh(), ow = p.ow();
  for (int c = 0; c < icg; ++c) {
    T* plane = src + static_cast<std::size_t>(c) * p.ih * p.iw;
    for (int ki = 0; ki < p.kh; ++ki)
      for (int kj = 0; kj < p.kw; ++kj) {
        const ColumnRange r = valid_columns(p, kj, ow);
        for (int y = 0; y < oh; ++y, col += ow) {
          const int iy = y * p.sh - p.ph + ki;
          if (iy < 0 || iy >= p.ih) continue;
          T* out = plane + iy * p.iw;
          const int shift = kj - p.pw;
          if (p.sw == 1) {
            for (int x = r.lo; x < r.hi; ++x) out[x + shift] += col[x];
          } else {
            for (int x = r.lo; x < r.hi; ++x) out[x * p.sw + shift] += col[x];
          }
        }
      }
  }
}

template <class T>
using GemmFn = void (*)(bool, bool, int, int, int, T, const T*, int, const T*, int, T, T*, int);

// One slot alone may use the TBB-parallel GEMM; several slots already occupy the cores.
template <class T>
GemmFn<T> gemm_for(const Lowering& l) {
  return l.slots == 1 ? &gemm<T> : &gemm_serial<T>;
}

template <class T>
void fwd_image(const ConvProblem& p, const Lowering& l, const ConvArgs& args, int n, T* col) {
  const std::size_t src_group = static_cast<std::size_t>(l.icg) * p.ih * p.iw;
  const std::size_t dst_group = static_cast<std::size_t>(l.ocg) * l.ohw;
  for (int gi = 0; gi < p.g; ++gi) {
    const T* src = args.src.data<T>() + (static_cast<std::size_t>(n) * p.g + gi) * src_group;
    if (!l.image_is_col) im2col(p, l.icg, src, col);
    const T* wei = args.wei.data<T>() + static_cast<std::size_t>(gi) * l.ocg * l.k;
    T* dst = writable<T>(args.dst) + (static_cast<std::size_t>(n) * p.g + gi) * dst_group;
    gemm_for<T>(l)(false, false, l.ocg, l.ohw, l.k, T(1), wei, l.k, l.image_is_col ? src : col,
                   l.ohw, T(0), dst, l.ohw);
  }
}

template <class T>
void bwd_data_image(const ConvProblem& p, const Lowering& l, const ConvArgs& args, int n, T* col) {
  const std::size_t src_group = static_cast<std::size_t>(l.icg) * p.ih * p.iw;
  const std::size_t dst_group = static_cast<std::size_t>(l.ocg) * l.ohw;
  T* image = writable<T>(args.diff_src) + static_cast<std::size_t>(n) * p.g * src_group;
  if (!l.image_is_col) std::fill(image, image + p.g * src_group, T(0));
  for (int gi = 0; gi < p.g; ++gi) {
    const T* wei = args.wei.data<T>() + static_cast<std::size_t>(gi) * l.ocg * l.k;
    const T* diff_dst =
        args.diff_dst.data<T>() + (static_cast<std::size_t>(n) * p.g + gi) * dst_group;
    T* diff_src = image + gi * src_group;
    gemm_for<T>(l)(true, false, l.k, l.ohw, l.ocg, T(1), wei, l.k, diff_dst, l.ohw, T(0),
                   l.image_is_col ? diff_src : col, l.ohw);
    if (!l.image_is_col) col2im_add(p, l.icg, col, diff_src);
  }
}

// Accumulates image n's contribution into acc (a full dW); `first` overwrites instead.
template <class T>
void bwd_weights_image(const ConvProblem& p, const Lowering& l, const ConvArgs& args, int n, T* col,
                       T* acc, bool first) {
  const std::size_t src_group = static_cast<std::size_t>(l.icg) * p.ih * p.iw;
  const std::size_t dst_group = static_cast<std::size_t>(l.ocg) * l.ohw;
  for (int gi = 0; gi < p.g; ++gi) {
    const T* src = args.src.data<T>() + (static_cast<std::size_t>(n) * p.g + gi) * src_group;
    if (!l.image_is_col) im2col(p, l.icg, src, col);
    const T* diff_dst =
        args.diff_dst.data<T>() + (static_cast<std::size_t>(n) * p.g + gi) * dst_group;
    gemm_for<T>(l)(false, true, l.ocg, l.k, l.ohw, T(1), diff_dst, l.ohw,
                   l.image_is_col ? src : col, l.ohw, first ? T(0) : T(1),
                   acc + static_cast<std::size_t>(gi) * l.ocg * l.k, l.k);
  }
}

template <class T>
void run_bwd_weights(const ConvProblem& p, const Lowering& l, const ConvArgs& args, Workspace ws) {
  T* diff_wei = writable<T>(args.diff_wei);
  tbb::parallel_for(0, l.slots, [&](int s) {
    T* acc = s == 0 ? diff_wei : l.partial<T>(ws, s);
    for (int n = s; n < p.mb; n += l.slots)
      bwd_weights_image(p, l, args, n, l.col<T>(ws, s), acc, n == s);
  });
  const std::size_t count = static_cast<std::size_t>(p.oc) * l.k;
  for (int s = 1; s < l.slots; ++s) {
    const T* partial = l.partial<T>(ws, s);
    for (std::size_t i = 0; i < count; ++i) diff_wei[i] += partial[i];
  }
}

template <class T>
void run_typed(const ConvProblem& p, const Lowering& l, const ConvArgs& args, Workspace ws) {
  if (p.dir == Direction::bwd_weights) return run_bwd_weights<T>(p, l, args, ws);
  tbb::parallel_for(0, l.slots, [&](int s) {
    for (int n = s; n < p.mb; n += l.slots) {
      if (p.dir == Direction::fwd) {
        fwd_image(p, l, args, n, l.col<T>(ws, s));
      } else {
        bwd_data_image(p, l, args, n, l.col<T>(ws, s));
      }
    }
  });
}

}  // namespace

bool Im2colGemmSolver::applicable(const ConvProblem& problem, std::string* why) const {
  return conv_problem_well_formed(problem, why);
}

std::size_t Im2colGemmSolver::workspace_bytes(const ConvProblem& problem, const TuneConfig&) const {
  return Lowering(problem).total_bytes();
}

void Im2colGemmSolver::run(const ConvProblem& p, const TuneConfig&, const ConvArgs& args,
                           Workspace ws) const {
  check_conv_args(p, args, Layout::NCHW);
  const Lowering l(p);
  TUNECNN_CHECK(ws.bytes >= l.total_bytes(), "im2col_gemm needs ", l.total_bytes(),
                " workspace bytes, got ", ws.bytes, " for ", p.key());
  dispatch_dtype(p.dt, [&]<class T>() { run_typed<T>(p, l, args, ws); });
}

}  // namespace tunecnn
