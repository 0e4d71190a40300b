// im2col + GEMM (Chellapilla et al. 2006; Caffe's convolution): the receptive fields of a chunk of
// images are copied into a (ic/g*kh*kw) x (chunk*oh*ow) column matrix so every group is one
// row-major GEMM: fwd dst = W x col, bwd_data col = W^T x dO then col2im, bwd_weights
// dW += dO x col^T.
// Constraints: NCHW on the CPU, f32/f64, any stride, padding and groups.
// Tunable: "chunk", the images lowered together. Larger chunks make wider GEMMs (small images
// give short rows) at the cost of a bigger workspace and an extra copy of dst or dO, whose
// images are not adjacent in the chunk's column order; chunk 1 lowers one image at a time.
// Chunks are split over P = min(TBB concurrency, chunks) fixed slots, each with its own buffers
// and (bwd_weights) its own dW partial, summed in slot order so results are deterministic.
// A 1x1, stride-1, unpadded kernel with chunk 1 needs no columns: the image is that matrix.
// Depthwise problems (g == ic == oc > 1) are left to channel_by_channel, which runs this same
// lowering through run_im2col_gemm, so the tuner does not time one algorithm under two names.
#include "ops/conv/im2col_gemm.h"

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>

#include "ops/blas.h"
#include "ops/conv/args.h"

namespace tunecnn {
namespace {

constexpr int kMaxChunk = 64;

int chunk_of(const ConvProblem& p, const TuneConfig& config) {
  return std::clamp(config.get("chunk", 1), 1, p.mb);
}

// The shape of the lowered problem and of its workspace, shared by run and workspace_bytes.
// Workspace order: [dW partials of slots 1..P-1][slot P-1]...[slot 0], each slot [col | tmp].
// Slot 0 always lowers a full first chunk, so the buffer's last bytes are always written.
struct Lowering {
  int icg, ocg, k, ohw, chunk, chunks, slots;
  bool image_is_col;
  std::size_t col_bytes, tmp_bytes, partial_bytes;  // aligned; tmp holds dst or dO of a chunk

  Lowering(const ConvProblem& p, const TuneConfig& config)
      : icg(p.ic / p.g),
        ocg(p.oc / p.g),
        k(icg * p.kh * p.kw),
        ohw(p.oh() * p.ow()),
        chunk(chunk_of(p, config)),
        chunks((p.mb + chunk - 1) / chunk),
        slots(std::min(tbb::this_task_arena::max_concurrency(), chunks)),
        image_is_col(chunk == 1 && p.kh == 1 && p.kw == 1 && p.sh == 1 && p.sw == 1 && p.ph == 0 &&
                     p.pw == 0) {
    const std::size_t elem = dtype_size(p.dt);
    const std::size_t columns = static_cast<std::size_t>(chunk) * ohw;
    col_bytes = image_is_col ? 0 : align_workspace(k * columns * elem);
    tmp_bytes = chunk == 1 ? 0 : align_workspace(ocg * columns * elem);
    const std::size_t weights = static_cast<std::size_t>(p.oc) * k * elem;
    partial_bytes = p.dir == Direction::bwd_weights ? align_workspace(weights) : 0;
  }
  int ld() const { return chunk * ohw; }  // the row length of col and tmp
  std::size_t slot_bytes() const { return col_bytes + tmp_bytes; }
  std::size_t total_bytes() const { return (slots - 1) * partial_bytes + slots * slot_bytes(); }
  char* slot_base(Workspace ws, int slot) const {
    return ws.as<char>() + (slots - 1) * partial_bytes + (slots - 1 - slot) * slot_bytes();
  }
  template <class T>
  T* col(Workspace ws, int slot) const {
    return reinterpret_cast<T*>(slot_base(ws, slot));
  }
  template <class T>
  T* tmp(Workspace ws, int slot) const {
    return reinterpret_cast<T*>(slot_base(ws, slot) + col_bytes);
  }
  // Slot 0 accumulates straight into diff_wei, so only the other slots need a partial.
  template <class T>
  T* partial(Workspace ws, int slot) const {
    return reinterpret_cast<T*>(ws.as<char>() + (slot - 1) * partial_bytes);
  }
};

// The images [first, first + count) of one chunk.
struct Chunk {
  int first, count;
};

// Runs fn(j) for the chunk's images; in parallel when a single slot has the cores to itself.
template <class Fn>
void for_each_image(const Lowering& l, const Chunk& c, Fn&& fn) {
  if (l.slots == 1 && c.count > 1) {
    tbb::parallel_for(0, c.count, [&](int j) { fn(j); });
  } else {
    for (int j = 0; j < c.count; ++j) fn(j);
  }
}

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

// Rows are (c, ki, kj), ld apart; an image fills oh runs of ow values of each row, copied
// contiguously for stride 1.
template <class T>
void im2col(const ConvProblem& p, int icg, const T* src, T* col, int ld) {
  const int oh = p.oh(), ow = p.ow();
  for (int c = 0; c < icg; ++c) {
    const T* plane = src + static_cast<std::size_t>(c) * p.ih * p.iw;
    for (int ki = 0; ki < p.kh; ++ki)
      for (int kj = 0; kj < p.kw; ++kj, col += ld) {
        const ColumnRange r = valid_columns(p, kj, ow);
        T* row = col;
        for (int y = 0; y < oh; ++y, row += ow) {
          const int iy = y * p.sh - p.ph + ki;
          if (iy < 0 || iy >= p.ih) {
            std::fill(row, row + ow, T(0));
            continue;
          }
          // Rows are short (tens of values): inline loops beat memcpy/memset calls here.
          const T* in = plane + iy * p.iw;
          const int shift = kj - p.pw;
          for (int x = 0; x < r.lo; ++x) row[x] = T(0);
          if (p.sw == 1) {
            for (int x = r.lo; x < r.hi; ++x) row[x] = in[x + shift];
          } else {
            for (int x = r.lo; x < r.hi; ++x) row[x] = in[x * p.sw + shift];
          }
          for (int x = r.hi; x < ow; ++x) row[x] = T(0);
        }
      }
  }
}

// The adjoint of im2col: adds every column entry back onto the input pixel it was copied from.
template <class T>
void col2im_add(const ConvProblem& p, int icg, const T* col, int ld, T* src) {
  const int oh = p.oh(), ow = p.ow();
  for (int c = 0; c < icg; ++c) {
    T* plane = src + static_cast<std::size_t>(c) * p.ih * p.iw;
    for (int ki = 0; ki < p.kh; ++ki)
      for (int kj = 0; kj < p.kw; ++kj, col += ld) {
        const ColumnRange r = valid_columns(p, kj, ow);
        const T* row = col;
        for (int y = 0; y < oh; ++y, row += ow) {
          const int iy = y * p.sh - p.ph + ki;
          if (iy < 0 || iy >= p.ih) continue;
          T* out = plane + iy * p.iw;
          const int shift = kj - p.pw;
          if (p.sw == 1) {
            for (int x = r.lo; x < r.hi; ++x) out[x + shift] += row[x];
          } else {
            for (int x = r.lo; x < r.hi; ++x) out[x * p.sw + shift] += row[x];
          }
        }
      }
  }
}

// Copies a group's ocg x ohw block of each image between an NCHW tensor and the chunk's
// ocg x (count*ohw) matrix.
template <class T>
void gather_block(const Lowering& l, const Chunk& c, const T* nchw, std::size_t image_stride,
                  T* tmp) {
  for_each_image(l, c, [&](int j) {
    const T* image = nchw + (c.first + j) * image_stride;
    for (int o = 0; o < l.ocg; ++o)
      std::copy_n(image + static_cast<std::size_t>(o) * l.ohw, l.ohw,
                  tmp + static_cast<std::size_t>(o) * l.ld() + j * l.ohw);
  });
}

template <class T>
void scatter_block(const Lowering& l, const Chunk& c, const T* tmp, T* nchw,
                   std::size_t image_stride) {
  for_each_image(l, c, [&](int j) {
    T* image = nchw + (c.first + j) * image_stride;
    for (int o = 0; o < l.ocg; ++o)
      std::copy_n(tmp + static_cast<std::size_t>(o) * l.ld() + j * l.ohw, l.ohw,
                  image + static_cast<std::size_t>(o) * l.ohw);
  });
}

template <class T>
using GemmFn = void (*)(bool, bool, int, int, int, T, const T*, int, const T*, int, T, T*, int);

// One slot alone may use the TBB-parallel GEMM; several slots already occupy the cores.
template <class T>
GemmFn<T> gemm_for(const Lowering& l) {
  return l.slots == 1 ? &gemm<T> : &gemm_serial<T>;
}

// Pointers to group gi of the NCHW tensors, and their per-image strides.
struct GroupStrides {
  std::size_t src_image, dst_image, src_group, dst_group;
  GroupStrides(const ConvProblem& p, const Lowering& l)
      : src_image(static_cast<std::size_t>(p.ic) * p.ih * p.iw),
        dst_image(static_cast<std::size_t>(p.oc) * l.ohw),
        src_group(static_cast<std::size_t>(l.icg) * p.ih * p.iw),
        dst_group(static_cast<std::size_t>(l.ocg) * l.ohw) {}
};

template <class T>
void lower_chunk(const ConvProblem& p, const Lowering& l, const Chunk& c, const T* src, T* col) {
  const GroupStrides s(p, l);
  for_each_image(l, c, [&](int j) {
    im2col(p, l.icg, src + (c.first + j) * s.src_image, col + j * l.ohw, l.ld());
  });
}

template <class T>
void fwd_chunk(const ConvProblem& p, const Lowering& l, const ConvBuffers<T>& b, const Chunk& c,
               T* col, T* tmp) {
  const GroupStrides s(p, l);
  for (int gi = 0; gi < p.g; ++gi) {
    const T* src = b.src + gi * s.src_group;
    T* dst = b.dst + gi * s.dst_group;
    const T* wei = b.wei + static_cast<std::size_t>(gi) * l.ocg * l.k;
    if (l.image_is_col) {
      gemm_for<T>(l)(false, false, l.ocg, l.ohw, l.k, T(1), wei, l.k, src + c.first * s.src_image,
                     l.ohw, T(0), dst + c.first * s.dst_image, l.ohw);
      continue;
    }
    lower_chunk(p, l, c, src, col);
    const int n = c.count * l.ohw;
    if (l.chunk == 1) {
      gemm_for<T>(l)(false, false, l.ocg, n, l.k, T(1), wei, l.k, col, l.ld(), T(0),
                     dst + c.first * s.dst_image, l.ohw);
    } else {
      gemm_for<T>(l)(false, false, l.ocg, n, l.k, T(1), wei, l.k, col, l.ld(), T(0), tmp, l.ld());
      scatter_block(l, c, tmp, dst, s.dst_image);
    }
  }
}

template <class T>
void bwd_data_chunk(const ConvProblem& p, const Lowering& l, const ConvBuffers<T>& b,
                    const Chunk& c, T* col, T* tmp) {
  const GroupStrides s(p, l);
  T* diff_src = b.diff_src;
  if (!l.image_is_col)
    std::fill(diff_src + c.first * s.src_image, diff_src + (c.first + c.count) * s.src_image, T(0));
  for (int gi = 0; gi < p.g; ++gi) {
    const T* wei = b.wei + static_cast<std::size_t>(gi) * l.ocg * l.k;
    const T* diff_dst = b.diff_dst + gi * s.dst_group;
    T* out = diff_src + gi * s.src_group;
    if (l.image_is_col) {
      gemm_for<T>(l)(true, false, l.k, l.ohw, l.ocg, T(1), wei, l.k,
                     diff_dst + c.first * s.dst_image, l.ohw, T(0), out + c.first * s.src_image,
                     l.ohw);
      continue;
    }
    const T* dy = diff_dst + c.first * s.dst_image;
    if (l.chunk > 1) {
      gather_block(l, c, diff_dst, s.dst_image, tmp);
      dy = tmp;
    }
    gemm_for<T>(l)(true, false, l.k, c.count * l.ohw, l.ocg, T(1), wei, l.k, dy,
                   l.chunk > 1 ? l.ld() : l.ohw, T(0), col, l.ld());
    for_each_image(l, c, [&](int j) {
      col2im_add(p, l.icg, col + j * l.ohw, l.ld(), out + (c.first + j) * s.src_image);
    });
  }
}

// Accumulates the chunk's contribution into acc (a full dW); `first` overwrites instead.
template <class T>
void bwd_weights_chunk(const ConvProblem& p, const Lowering& l, const ConvBuffers<T>& b,
                       const Chunk& c, T* col, T* tmp, T* acc, bool first) {
  const GroupStrides s(p, l);
  for (int gi = 0; gi < p.g; ++gi) {
    const T* src = b.src + gi * s.src_group;
    const T* diff_dst = b.diff_dst + gi * s.dst_group;
    const T* x = src + c.first * s.src_image;
    const T* dy = diff_dst + c.first * s.dst_image;
    if (!l.image_is_col) {
      lower_chunk(p, l, c, src, col);
      x = col;
    }
    if (l.chunk > 1) {
      gather_block(l, c, diff_dst, s.dst_image, tmp);
      dy = tmp;
    }
    gemm_for<T>(l)(false, true, l.ocg, l.k, c.count * l.ohw, T(1), dy, l.chunk > 1 ? l.ld() : l.ohw,
                   x, l.image_is_col ? l.ohw : l.ld(), first ? T(0) : T(1),
                   acc + static_cast<std::size_t>(gi) * l.ocg * l.k, l.k);
  }
}

Chunk chunk_at(const ConvProblem& p, const Lowering& l, int index) {
  const int first = index * l.chunk;
  return {first, std::min(l.chunk, p.mb - first)};
}

template <class T>
void run_bwd_weights(const ConvProblem& p, const Lowering& l, const ConvBuffers<T>& b,
                     Workspace ws) {
  T* diff_wei = b.diff_wei;
  tbb::parallel_for(0, l.slots, [&](int s) {
    T* acc = s == 0 ? diff_wei : l.partial<T>(ws, s);
    for (int i = s; i < l.chunks; i += l.slots)
      bwd_weights_chunk(p, l, b, chunk_at(p, l, i), l.col<T>(ws, s), l.tmp<T>(ws, s), acc, i == s);
  });
  const std::size_t count = static_cast<std::size_t>(p.oc) * l.k;
  for (int s = 1; s < l.slots; ++s) {
    const T* partial = l.partial<T>(ws, s);
    for (std::size_t i = 0; i < count; ++i) diff_wei[i] += partial[i];
  }
}

template <class T>
void run_typed(const ConvProblem& p, const Lowering& l, const ConvBuffers<T>& b, Workspace ws) {
  if (p.dir == Direction::bwd_weights) return run_bwd_weights<T>(p, l, b, ws);
  tbb::parallel_for(0, l.slots, [&](int s) {
    for (int i = s; i < l.chunks; i += l.slots) {
      if (p.dir == Direction::fwd) {
        fwd_chunk(p, l, b, chunk_at(p, l, i), l.col<T>(ws, s), l.tmp<T>(ws, s));
      } else {
        bwd_data_chunk(p, l, b, chunk_at(p, l, i), l.col<T>(ws, s), l.tmp<T>(ws, s));
      }
    }
  });
}

}  // namespace

// Chunk 1 first, the untuned default: a rule aiming at 1024-column GEMMs made LeNet's training
// step 6% slower (bench train, batch 64), and chunking wins only on some layers and directions
// (bench conv), so it is left to the tuner. Then every power of two up to the batch.
std::vector<TuneConfig> im2col_gemm_configs(const ConvProblem& p) {
  std::vector<TuneConfig> configs;
  for (int chunk = 1; chunk <= std::min(p.mb, kMaxChunk); chunk *= 2)
    configs.push_back(TuneConfig{{{"chunk", chunk}}});
  return configs;
}

std::size_t im2col_gemm_workspace_bytes(const ConvProblem& p, const TuneConfig& config) {
  return Lowering(p, config).total_bytes();
}

template <class T>
void run_im2col_gemm(const ConvProblem& p, const TuneConfig& config, const ConvBuffers<T>& b,
                     Workspace ws) {
  const Lowering l(p, config);
  TUNECNN_CHECK(ws.bytes >= l.total_bytes(), "im2col_gemm needs ", l.total_bytes(),
                " workspace bytes, got ", ws.bytes, " for ", p.key());
  run_typed<T>(p, l, b, ws);
}
template void run_im2col_gemm<float>(const ConvProblem&, const TuneConfig&,
                                     const ConvBuffers<float>&, Workspace);
template void run_im2col_gemm<double>(const ConvProblem&, const TuneConfig&,
                                      const ConvBuffers<double>&, Workspace);

void run_im2col_gemm(const ConvProblem& p, const TuneConfig& config, const ConvArgs& args,
                     Workspace ws) {
  check_conv_args(p, args, Layout::NCHW);
  dispatch_dtype(p.dt, [&]<class T>() {
    ConvBuffers<T> b;
    switch (p.dir) {
      case Direction::fwd:
        b = {.src = args.src.data<T>(), .wei = args.wei.data<T>(), .dst = writable<T>(args.dst)};
        break;
      case Direction::bwd_data:
        b = {.wei = args.wei.data<T>(),
             .diff_dst = args.diff_dst.data<T>(),
             .diff_src = writable<T>(args.diff_src)};
        break;
      case Direction::bwd_weights:
        b = {.src = args.src.data<T>(),
             .diff_dst = args.diff_dst.data<T>(),
             .diff_wei = writable<T>(args.diff_wei)};
        break;
    }
    run_im2col_gemm(p, config, b, ws);
  });
}

bool Im2colGemmSolver::applicable(const ConvProblem& problem, std::string* why) const {
  if (!conv_problem_well_formed(problem, why)) return false;
  if (problem.g > 1 && problem.g == problem.ic && problem.oc == problem.ic)
    return reject(why, "depthwise: channel_by_channel runs this lowering");
  return true;
}

std::vector<TuneConfig> Im2colGemmSolver::configs(const ConvProblem& p) const {
  return im2col_gemm_configs(p);
}

std::size_t Im2colGemmSolver::workspace_bytes(const ConvProblem& problem,
                                              const TuneConfig& config) const {
  return im2col_gemm_workspace_bytes(problem, config);
}

void Im2colGemmSolver::run(const ConvProblem& p, const TuneConfig& config, const ConvArgs& args,
                           Workspace ws) const {
  run_im2col_gemm(p, config, args, ws);
}

}  // namespace tunecnn
