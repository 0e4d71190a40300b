// MEC's backward pass, derived here: the paper gives only the forward pass.
//
// With ihp = ih + 2ph and Ip the zero-padded input, MEC lowers a chunk of images n (the paper:
// the whole batch) into
//   L[n,w,h',kj,c] = Ip[n, h', sw*w + kj, c]          (h' < ihp; one kw*ic run per (n, w, h'))
// and, with K[ki,kj,c,k] = wei[k,c,ki,kj], the forward pass is
//   O[n,h,w,k] = sum_{ki,kj,c} L[n,w,sh*h+ki,kj,c] K[ki,kj,c,k].
// Read L as a (chunk*ow) x (ihp*kw*ic) matrix: for one output row h the (ki,kj,c) triples are the
// contiguous columns [sh*h*kw*ic, sh*h*kw*ic + kh*kw*ic), so partition h is a sub-matrix L_h with
// leading dimension ihp*kw*ic and O_h = L_h K holds the rows (n, w) of output row h. Solution A
// multiplies all of L_h at once, Solution B one image's rows at a time. Images never mix, so the
// chunks are independent: the batch goes through one L, chunk after chunk.
//
// Backward-data. O is linear in L, so by the chain rule
//   dL[n,w,h',kj,c] = sum_{h,ki : sh*h+ki = h'} sum_k dO[n,h,w,k] K[ki,kj,c,k],
// that is dL_h = dO_h K^T, added onto the columns L_h was read from. Partitions h and h+d share
// columns whenever d*sh < kh (every 3x3 stride-1 row is read by three partitions), so their
// products must be summed, not stored. Partitions whose h agree modulo P = ceil(kh/sh) are
// disjoint and run in parallel; the P phases run in order, so every element is summed in the same
// order on every run. L is a copy of Ip (each pixel lands in up to ceil(kw/sw) rows w, each padded
// entry is a constant), and the adjoint of a copy is a scatter-add:
//   dI[n,y,x,c] = sum_{w,kj : sw*w+kj = x+pw} dL[n,w,y+ph,kj,c],
// with dL's padding rows and columns dropped; a chunk's dL lands only on that chunk's images.
//
// Backward-weights. K is used once per (n, h, w):
//   dK[ki,kj,c,k] = sum_{n,h,w} L[n,w,sh*h+ki,kj,c] dO[n,h,w,k] = sum_chunks sum_h L_h^T dO_h,
// the same compact L as the forward pass, summed over partitions (and images in Solution B) and
// over chunks. Solution A's dO_h, the rows (n, w) of output row h, are not evenly spaced in NHWC,
// so its backward passes first copy a chunk's dO into h-n-w-c order, the layout its forward pass
// produces.
//
// MEC (Cho and Brand, ICML 2017, Algorithm 2) on NHWC activations, all three directions: the
// lowering above, weights repacked once per call as oc x (kh*kw*ic) (row order ki, kj, c), a GEMM
// per partition.
// Constraints: NHWC on the CPU, f32/f64, groups == 1, any kernel, stride and padding (a row of L
// and mb*ow within int, for BLAS).
// Tunables: chunk: images lowered together, 1..mb (absent: mb, the paper's Algorithm 2); L holds
// chunk*ow*ihp*kw*ic elements, so the workspace shrinks with it. The default config lowers one
// image at a time where it runs Solution B and, for A, the fewest images (a power of two) that
// give its GEMMs 64 rows; the configs add the whole batch and one image (the least memory). T:
// Solution A (one GEMM per output row over the chunk's chunk*ow rows, result permuted from h-n-w-c)
// when ow <= T, |O| <= |L| and chunk > 1, else Solution B (one GEMM per image and output row); with
// chunk 1 the two are the same GEMMs and B's needs no permutation. mt: 0 runs a chunk's partitions
// in parallel with 1-thread GEMMs, 1 runs them in turn, each split over the cores by gemm().
// Deterministic for a given thread count and config: chunks in order, fixed phases and
// slot-ordered sums.
#include "ops/conv/mec.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <climits>

#include "ops/blas.h"
#include "ops/conv/args.h"

namespace tunecnn {
namespace {

// The paper's T on recent GPUs; the tuner calibrates it per device.
constexpr int kPaperThreshold = 100;
// The untuned default chunk gives Solution A's GEMMs at least this many rows.
constexpr int kDefaultMinRows = 64;

// Elements of one image's output and of one image's slice of L.
std::size_t out_elements_per_image(const ConvProblem& p) {
  return static_cast<std::size_t>(p.oh()) * p.ow() * p.oc;
}
std::size_t lowered_elements_per_image(const ConvProblem& p) {
  return static_cast<std::size_t>(p.ow()) * (p.ih + 2 * p.ph) * p.kw * p.ic;
}

// |O| <= |L|, the same for any number of images.
bool solution_a_fits(const ConvProblem& p) {
  return out_elements_per_image(p) <= lowered_elements_per_image(p);
}

// The lowered problem and its workspace, shared by run and workspace_bytes. Regions in order:
// [a chunk's dO as h-n-w-c: Solution A backward] [dK partials of slots 1..: bwd_weights, mt=0]
// [weights or dK: oc x kd] [a chunk's L or dL]. L comes last and is always written in full: the
// first chunk is a full one.
struct MecPlan {
  ConvProblem p;
  int oh, ow, ihp;
  int row;  // ihp*kw*ic: one row (n, w) of L
  int kd;   // kh*kw*ic: the width of a partition
  int chunk, chunks;
  bool a, mt;
  int slots;  // dK accumulators of bwd_weights with mt=0; 1 otherwise
  std::size_t out_bytes, partial_bytes, weights_bytes, lowered_bytes;

  MecPlan(const ConvProblem& problem, const TuneConfig& config)
      : p(problem),
        oh(problem.oh()),
        ow(problem.ow()),
        ihp(problem.ih + 2 * problem.ph),
        row(ihp * problem.kw * problem.ic),
        kd(problem.kh * problem.kw * problem.ic),
        chunk(mec_chunk(problem, config)),
        chunks((problem.mb + chunk - 1) / chunk),
        a(mec_uses_solution_a(problem, config)),
        mt(config.get("mt", 0) != 0),
        slots(problem.dir == Direction::bwd_weights && !mt
                  ? std::min(tbb::this_task_arena::max_concurrency(), partitions(chunk))
                  : 1) {
    const std::size_t elem = dtype_size(p.dt);
    out_bytes = a && p.dir != Direction::fwd
                    ? align_workspace(chunk * out_elements_per_image(p) * elem)
                    : 0;
    weights_bytes = align_workspace(static_cast<std::size_t>(p.oc) * kd * elem);
    partial_bytes = slots > 1 ? weights_bytes : 0;
    lowered_bytes = align_workspace(chunk * lowered_elements_per_image(p) * elem);
  }
  // Partitions of a chunk of `images`: one per output row in A, per image and row in B.
  int partitions(int images) const { return (a ? 1 : images) * oh; }
  std::size_t total_bytes() const {
    return out_bytes + (slots - 1) * partial_bytes + weights_bytes + lowered_bytes;
  }
  template <class T>
  T* out(Workspace ws) const {
    return ws.as<T>();
  }
  template <class T>
  T* partial(Workspace ws, int slot) const {
    return reinterpret_cast<T*>(ws.as<char>() + out_bytes + (slot - 1) * partial_bytes);
  }
  template <class T>
  T* weights(Workspace ws) const {
    return partial<T>(ws, slots);
  }
  template <class T>
  T* lowered(Workspace ws) const {
    return reinterpret_cast<T*>(reinterpret_cast<char*>(weights<T>(ws)) + weights_bytes);
  }
};

// The images [first, first + count) of one chunk.
struct Chunk {
  int first, count;
};

Chunk chunk_at(const MecPlan& m, int index) {
  const int first = index * m.chunk;
  return {first, std::min(m.chunk, m.p.mb - first)};
}

// One GEMM: the rows (n, w) of the chunk's images [n0, n0 + images) for output row h.
struct Partition {
  int n0, images, h;
};

// The j-th partition of chunk c among those of the output rows first_h, first_h + step_h, ...
Partition partition_at(const MecPlan& m, const Chunk& c, int j, int first_h, int step_h) {
  const int rows = (m.oh - first_h + step_h - 1) / step_h;
  const int h = first_h + (j % rows) * step_h;
  return m.a ? Partition{0, c.count, h} : Partition{j / rows, 1, h};
}

int partition_count(const MecPlan& m, const Chunk& c, int first_h, int step_h) {
  return (m.a ? 1 : c.count) * ((m.oh - first_h + step_h - 1) / step_h);
}

// L_h: a sub-matrix of the chunk's L with leading dimension m.row.
template <class P>
P lowered_part(const MecPlan& m, P l, Partition q) {
  return l + static_cast<std::size_t>(q.n0) * m.ow * m.row +
         static_cast<std::size_t>(m.p.sh) * q.h * m.p.kw * m.p.ic;
}

enum class Order { nhwc, hnwc };

// The (n, h) block of ow*oc values of a chunk of `images`, in either order.
std::size_t block_offset(const MecPlan& m, Order order, int images, int n, int h) {
  const std::size_t block = static_cast<std::size_t>(m.ow) * m.p.oc;
  return (order == Order::nhwc ? static_cast<std::size_t>(n) * m.oh + h
                               : static_cast<std::size_t>(h) * images + n) *
         block;
}

// O_h (or dO_h) of the chunk whose output starts at o: rows (n, w) of output row h, leading
// dimension oc. Solution A's matrices are h-n-w-c, so its rows over the chunk are evenly spaced;
// B's stay n-h-w-c.
template <class P>
P out_part(const MecPlan& m, const Chunk& c, P o, Partition q) {
  return o + block_offset(m, m.a ? Order::hnwc : Order::nhwc, c.count, q.n0, q.h);
}

// Copies every (n, h) block of a chunk's ow*oc values from one block order to another.
template <class T>
void permute_blocks(const MecPlan& m, const Chunk& c, const T* from, Order from_order, T* to,
                    Order to_order) {
  const std::size_t block = static_cast<std::size_t>(m.ow) * m.p.oc;
  tbb::parallel_for(0, c.count * m.oh, [&](int i) {
    const int n = i / m.oh, h = i % m.oh;
    const T* src = from + block_offset(m, from_order, c.count, n, h);
    std::copy(src, src + block, to + block_offset(m, to_order, c.count, n, h));
  });
}

// wei[k][c][ki][kj] -> kt[k][(ki*kw + kj)*ic + c]: K^T, so that per k it is a small transpose
// that stays in L1. K itself needs a full (tiled) transpose; tried, it cost 3x as much and the
// GEMMs gained nothing in place (cv12 forward 8.3 -> 11 ms at batch 8).
template <class T>
void pack_weights(const MecPlan& m, const T* wei, T* kt) {
  const int taps = m.p.kh * m.p.kw, ic = m.p.ic;
  tbb::parallel_for(0, m.p.oc, [&](int k) {
    const T* from = wei + static_cast<std::size_t>(k) * m.kd;
    T* to = kt + static_cast<std::size_t>(k) * m.kd;
    for (int t = 0; t < taps; ++t)
      for (int c = 0; c < ic; ++c) to[t * ic + c] = from[c * taps + t];
  });
}

// The inverse of pack_weights, summing the slots' dK in slot order.
template <class T>
void unpack_weight_grad(const MecPlan& m, Workspace ws, T* diff_wei) {
  const int taps = m.p.kh * m.p.kw, ic = m.p.ic;
  tbb::parallel_for(0, m.p.oc, [&](int k) {
    const std::size_t offset = static_cast<std::size_t>(k) * m.kd;
    T* to = diff_wei + offset;
    const T* first = m.weights<T>(ws) + offset;
    for (int c = 0; c < ic; ++c)
      for (int t = 0; t < taps; ++t) to[c * taps + t] = first[t * ic + c];
    for (int s = 1; s < m.slots; ++s) {
      const T* from = m.partial<T>(ws, s) + offset;
      for (int c = 0; c < ic; ++c)
        for (int t = 0; t < taps; ++t) to[c * taps + t] += from[t * ic + c];
    }
  });
}

// The kernel columns kj whose input column x0 + kj lies inside [0, iw).
struct KernelColumns {
  int lo, hi;
};

KernelColumns inside(int x0, int kw, int iw) {
  const int lo = std::clamp(-x0, 0, kw);
  return {lo, std::clamp(iw - x0, lo, kw)};
}

std::size_t image_elements(const ConvProblem& p) {
  return static_cast<std::size_t>(p.ih) * p.iw * p.ic;
}

// Algorithm 2, step 2, for one chunk, with the padding applied here: every (n, w, h') is one
// kw*ic run of an NHWC input row, zero where it hangs over the border.
template <class T>
void lower(const MecPlan& m, const Chunk& c, const T* src, T* l) {
  const ConvProblem& p = m.p;
  const int run = p.kw * p.ic;
  src += c.first * image_elements(p);
  tbb::parallel_for(
      tbb::blocked_range<int>(0, c.count * m.ow), [&](const tbb::blocked_range<int>& r) {
        for (int i = r.begin(); i < r.end(); ++i) {
          const int n = i / m.ow, x0 = (i % m.ow) * p.sw - p.pw;
          const KernelColumns cols = inside(x0, p.kw, p.iw);
          T* out = l + static_cast<std::size_t>(i) * m.row;
          for (int hp = 0; hp < m.ihp; ++hp, out += run) {
            const int y = hp - p.ph;
            if (y < 0 || y >= p.ih) {
              std::fill(out, out + run, T(0));
              continue;
            }
            const T* in = src + (static_cast<std::size_t>(n) * p.ih + y) * p.iw * p.ic;
            std::fill(out, out + cols.lo * p.ic, T(0));
            if (cols.hi > cols.lo)
              std::copy_n(in + (x0 + cols.lo) * p.ic, (cols.hi - cols.lo) * p.ic,
                          out + cols.lo * p.ic);
            std::fill(out + cols.hi * p.ic, out + run, T(0));
          }
        }
      });
}

// The adjoint of lower(): each task owns one input row (n, y) of the chunk's diff_src and adds
// the runs of dL that were copied from it, in a fixed order of w.
template <class T>
void scatter_add(const MecPlan& m, const Chunk& c, const T* dl, T* diff_src) {
  const ConvProblem& p = m.p;
  const int run = p.kw * p.ic;
  const std::size_t width = static_cast<std::size_t>(p.iw) * p.ic;
  diff_src += c.first * image_elements(p);
  tbb::parallel_for(
      tbb::blocked_range<int>(0, c.count * p.ih), [&](const tbb::blocked_range<int>& r) {
        for (int i = r.begin(); i < r.end(); ++i) {
          const int n = i / p.ih, y = i % p.ih;
          T* out = diff_src + static_cast<std::size_t>(i) * width;
          std::fill(out, out + width, T(0));
          const T* in = dl + (static_cast<std::size_t>(n) * m.ow * m.ihp + y + p.ph) * run;
          for (int w = 0; w < m.ow; ++w, in += m.row) {
            const int x0 = w * p.sw - p.pw;
            const KernelColumns cols = inside(x0, p.kw, p.iw);
            if (cols.hi == cols.lo) continue;  // the run lies wholly in the padding
            T* to = out + (x0 + cols.lo) * p.ic;
            const T* from = in + cols.lo * p.ic;
            const int len = (cols.hi - cols.lo) * p.ic;
            for (int e = 0; e < len; ++e) to[e] += from[e];
          }
        }
      });
}

template <class T>
using GemmFn = void (*)(bool, bool, int, int, int, T, const T*, int, const T*, int, T, T*, int);

// Runs fn(partition, gemm) for the chunk's partitions of rows first_h, first_h + step_h, ...:
// with mt=0 in parallel, each a 1-thread GEMM; with mt=1 one after the other, each split over
// the cores.
//
// Measured on the paper's cv1-cv12 at batch 8 with chunk = mb, 2 threads (AMD EPYC, OpenBLAS
// Cooperlake kernels, best of 7, ms, mt=0 vs mt=1 in the same solution): mt=0 wins wherever
// there are many partitions or thin GEMMs (fwd cv3 13.7 vs 25.6, cv7 12.5 vs 22.4, cv4 259 vs
// 430, cv8 92 vs 123, cv10 A 8.9 vs 11.9), so it is the default. mt=1 wins where Solution A has
// few partitions for the threads (cv12 fwd 8.2 vs 7.3, bwd_data 8.7 vs 7.7; cv6 bwd_data 13.0 vs
// 11.2) and for Solution B on small images (fwd cv10 11.7 vs 8.2, cv11 12.0 vs 7.2): there gemm()
// splits K into column blocks that stay in L2, where mt=0 has every thread stream all of K once
// per small GEMM. Each wins somewhere, so both stay configs for the tuner.
template <class T, class Fn>
void for_each_partition(const MecPlan& m, const Chunk& c, int first_h, int step_h, Fn&& fn) {
  const int count = partition_count(m, c, first_h, step_h);
  if (m.mt) {
    for (int j = 0; j < count; ++j) fn(partition_at(m, c, j, first_h, step_h), &gemm<T>);
    return;
  }
  tbb::parallel_for(0, count,
                    [&](int j) { fn(partition_at(m, c, j, first_h, step_h), &gemm_serial<T>); });
}

std::size_t chunk_out_offset(const MecPlan& m, const Chunk& c) {
  return c.first * out_elements_per_image(m.p);
}

template <class T>
void forward(const MecPlan& m, const ConvArgs& args, Workspace ws) {
  const ConvProblem& p = m.p;
  T* kt = m.weights<T>(ws);
  T* l = m.lowered<T>(ws);
  pack_weights(m, args.wei.data<T>(), kt);
  for (int i = 0; i < m.chunks; ++i) {
    const Chunk c = chunk_at(m, i);
    lower(m, c, args.src.data<T>(), l);
    T* dst = writable<T>(args.dst) + chunk_out_offset(m, c);
    for_each_partition<T>(m, c, 0, 1, [&](Partition q, GemmFn<T> gemm) {
      gemm(false, true, q.images * m.ow, p.oc, m.kd, T(1), lowered_part(m, l, q), m.row, kt, m.kd,
           T(0), out_part(m, c, dst, q), p.oc);
    });
    if (!m.a) continue;
    // Solution A left the chunk's dst in h-n-w-c. L is no longer needed until the next chunk
    // and holds at least the chunk's |O| (A's guard), so it is the scratch for the permutation
    // and A needs no memory of its own.
    permute_blocks(m, c, dst, Order::hnwc, l, Order::hnwc);
    permute_blocks(m, c, l, Order::hnwc, dst, Order::nhwc);
  }
}

// The chunk's dO as the partitions read it: Solution A needs it h-n-w-c, in its own region.
template <class T>
const T* partitioned_diff_dst(const MecPlan& m, const Chunk& c, const ConvArgs& args,
                              Workspace ws) {
  const T* diff_dst = args.diff_dst.data<T>() + chunk_out_offset(m, c);
  if (!m.a) return diff_dst;
  permute_blocks(m, c, diff_dst, Order::nhwc, m.out<T>(ws), Order::hnwc);
  return m.out<T>(ws);
}

// Phase 0's partitions store their products (beta 0) instead of adding them, which saves
// clearing all of dL first; only the columns none of them covers are cleared: the gaps between
// them (where P*sh > kh) and the rows below the last one.
template <class T>
void zero_uncovered(const MecPlan& m, const Chunk& c, int phases, T* dl) {
  const std::size_t step = static_cast<std::size_t>(m.p.sh) * m.p.kw * m.p.ic;
  tbb::parallel_for(0, c.count * m.ow, [&](int i) {
    T* row = dl + static_cast<std::size_t>(i) * m.row;
    for (int h = 0; h < m.oh; h += phases) {
      const bool last = h + phases >= m.oh;
      std::fill(row + h * step + m.kd, last ? row + m.row : row + (h + phases) * step, T(0));
    }
  });
}

template <class T>
void backward_data(const MecPlan& m, const ConvArgs& args, Workspace ws) {
  const ConvProblem& p = m.p;
  T* kt = m.weights<T>(ws);
  T* dl = m.lowered<T>(ws);
  pack_weights(m, args.wei.data<T>(), kt);
  const int phases = (p.kh + p.sh - 1) / p.sh;
  for (int i = 0; i < m.chunks; ++i) {
    const Chunk c = chunk_at(m, i);
    const T* diff_dst = partitioned_diff_dst<T>(m, c, args, ws);
    zero_uncovered(m, c, phases, dl);
    for (int phase = 0; phase < std::min(phases, m.oh); ++phase)
      for_each_partition<T>(m, c, phase, phases, [&](Partition q, GemmFn<T> gemm) {
        gemm(false, false, q.images * m.ow, m.kd, p.oc, T(1), out_part(m, c, diff_dst, q), p.oc, kt,
             m.kd, phase == 0 ? T(0) : T(1), lowered_part(m, dl, q), m.row);
      });
    scatter_add(m, c, dl, writable<T>(args.diff_src));
  }
}

template <class T>
void backward_weights(const MecPlan& m, const ConvArgs& args, Workspace ws) {
  const ConvProblem& p = m.p;
  T* l = m.lowered<T>(ws);
  for (int i = 0; i < m.chunks; ++i) {
    const Chunk c = chunk_at(m, i);
    lower(m, c, args.src.data<T>(), l);
    const T* diff_dst = partitioned_diff_dst<T>(m, c, args, ws);
    // dK^T (oc x kd) += dO_h^T L_h; the first product of each accumulator overwrites it.
    const auto product = [&](int j, GemmFn<T> gemm, T* acc, bool first) {
      const Partition q = partition_at(m, c, j, 0, 1);
      gemm(true, false, p.oc, m.kd, q.images * m.ow, T(1), out_part(m, c, diff_dst, q), p.oc,
           lowered_part(m, static_cast<const T*>(l), q), m.row, first ? T(0) : T(1), acc, m.kd);
    };
    const int count = m.partitions(c.count);
    if (m.mt) {
      for (int j = 0; j < count; ++j) product(j, &gemm<T>, m.weights<T>(ws), i == 0 && j == 0);
    } else {
      // Each slot sums a contiguous range of the chunk's partitions (neighbours share rows of L
      // in cache). The first chunk is full, so it gives every slot at least one product to
      // store; later chunks add.
      tbb::parallel_for(0, m.slots, [&](int s) {
        T* acc = s == 0 ? m.weights<T>(ws) : m.partial<T>(ws, s);
        const int begin = s * count / m.slots, end = (s + 1) * count / m.slots;
        for (int j = begin; j < end; ++j) product(j, &gemm_serial<T>, acc, i == 0 && j == begin);
      });
    }
  }
  unpack_weight_grad(m, ws, writable<T>(args.diff_wei));
}

// The untuned default chunk. Solution B's GEMMs are one image's whatever the chunk, and a single
// image already has oh partitions for the cores, so B lowers one image at a time. Solution A's
// GEMMs have chunk*ow rows and each streams all of K: the smallest power of two giving them
// kDefaultMinRows.
//
// Measured at batch 8, 2 threads (as for_each_partition, best config per chunk, min of 3
// medians, ms, forward): B layers lose nothing at chunk 1 (cv3 12.8 vs 13.3 at 8, cv4 246 vs
// 243, cv7 11.8 vs 12.3, cv8 81 vs 82); A layers with wide rows neither (cv1 ow 55: 11.4 at 1,
// 10.6 at 4, 11.0 at 8; cv9 ow 54: 9.6 at 2, 10.8 at 8; cv10, cv11 with mt=1: 8.0 and 6.6 at
// 1, 8.2 and 6.7 at 8). Narrow A layers pay for small chunks: cv5 (ow 20) 28.7 at 1, 23.8 at 2,
// 22.7 at 4, 20.9 at 8; cv6 (ow 10) 20.4 / 14.2 / 12.5 / 10.6; cv12 (ow 5) 17.0 / 11.2 / 7.8 /
// 6.4. Their L is small beside the weights, so a small chunk saves them little memory.
int default_chunk(const ConvProblem& p) {
  if (!mec_uses_solution_a(p, TuneConfig{{{"T", kPaperThreshold}}})) return 1;
  int chunk = 1;
  while (chunk < p.mb && chunk * p.ow() < kDefaultMinRows) chunk *= 2;
  return std::min(chunk, p.mb);
}

}  // namespace

int mec_chunk(const ConvProblem& problem, const TuneConfig& config) {
  return std::clamp(config.get("chunk", problem.mb), 1, std::max(problem.mb, 1));
}

bool mec_uses_solution_a(const ConvProblem& problem, const TuneConfig& config) {
  return problem.ow() <= config.get("T", kPaperThreshold) && solution_a_fits(problem) &&
         mec_chunk(problem, config) > 1;
}

std::size_t mec_lowered_elements(const ConvProblem& p) {
  return static_cast<std::size_t>(p.mb) * lowered_elements_per_image(p);
}

bool MecSolver::applicable(const ConvProblem& p, std::string* why) const {
  if (!conv_problem_well_formed(p, why)) return false;
  if (p.g != 1)
    return reject(why, "mec needs groups == 1; depthwise and grouped convs go to other solvers");
  if (static_cast<std::int64_t>(p.ih + 2 * p.ph) * p.kw * p.ic > INT_MAX ||
      static_cast<std::int64_t>(p.mb) * p.ow() > INT_MAX)
    return reject(why, "mec's lowered matrix is too large for 32-bit BLAS dimensions");
  return true;
}

// The default chunk first, then the paper's whole batch, then one image (the least memory),
// each once. Per chunk the paper's T, then a T that flips this problem to the other solution
// where A is possible at all (never with chunk 1, where A and B coincide); each with both ways
// of spreading the GEMMs over the cores.
std::vector<TuneConfig> MecSolver::configs(const ConvProblem& p) const {
  std::vector<int> chunks;
  for (int chunk : {default_chunk(p), p.mb, 1})
    if (std::find(chunks.begin(), chunks.end(), chunk) == chunks.end()) chunks.push_back(chunk);
  std::vector<TuneConfig> out;
  for (int chunk : chunks) {
    std::vector<int> thresholds = {kPaperThreshold};
    if (chunk > 1 && solution_a_fits(p))
      thresholds.push_back(p.ow() <= kPaperThreshold ? p.ow() - 1 : p.ow());
    for (int t : thresholds)
      for (int mt : {0, 1}) out.push_back(TuneConfig{{{"chunk", chunk}, {"T", t}, {"mt", mt}}});
  }
  return out;
}

std::size_t MecSolver::workspace_bytes(const ConvProblem& problem, const TuneConfig& config) const {
  return MecPlan(problem, config).total_bytes();
}

void MecSolver::run(const ConvProblem& p, const TuneConfig& config, const ConvArgs& args,
                    Workspace ws) const {
  check_conv_args(p, args, Layout::NHWC);
  TUNECNN_CHECK(p.g == 1, "mec needs groups == 1, got ", p.key());
  const MecPlan m(p, config);
  TUNECNN_CHECK(ws.bytes >= m.total_bytes(), "mec needs ", m.total_bytes(),
                " workspace bytes, got ", ws.bytes, " for ", p.key());
  dispatch_dtype(p.dt, [&]<class T>() {
    switch (p.dir) {
      case Direction::fwd:
        return forward<T>(m, args, ws);
      case Direction::bwd_data:
        return backward_data<T>(m, args, ws);
      case Direction::bwd_weights:
        return backward_weights<T>(m, args, ws);
    }
  });
}

}  // namespace tunecnn
