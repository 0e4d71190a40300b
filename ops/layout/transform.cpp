#include "ops/layout/transform.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/device.h"
#include "ops/layout/reference.h"
#include "ops/layout/transpose_shape.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace tunecnn {
namespace {

// A unit (128 x 128 when both sides are long: 64 KiB a side, inside L2) is what one thread takes
// at a time: about 5 us of work, so TBB's cost per chunk does not show and both threads get
// balanced shares whatever the batch (units of 64 and 256 measured the same within this
// machine's noise). When one side is short (C = 3 to NHWC) the unit grows along the other to
// keep about kUnitElems elements of work. Inside a unit the in-register blocks go in one of the
// orders of Order below; one of them walks 32 x 32 tiles (4 KiB a side, inside L1).
constexpr std::int64_t kTile = 32;
constexpr std::int64_t kUnit = 128;
constexpr std::int64_t kUnitElems = kUnit * kUnit;

// dst[j * dld + i] = src[i * sld + j] for i < rows, j < cols: the portable loop, also used for
// the edges the register kernels leave. Reads run contiguously, writes stride.
template <class T>
void transpose_scalar(const T* src, std::int64_t sld, T* dst, std::int64_t dld, std::int64_t rows,
                      std::int64_t cols) {
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) dst[j * dld + i] = src[i * sld + j];
}

// A B x B block transposed in registers: B vector loads and B vector stores instead of B * B
// scalar moves with strided stores (the scalar tile ran at about 10 GB/s in cache, a tenth of
// memcpy). B = 0: no kernel for T on this target, the scalar loop does everything.
template <class T>
constexpr int kBlock = 0;

#if defined(__AVX2__)
template <>
constexpr int kBlock<float> = 8;
template <>
constexpr int kBlock<double> = 4;

inline void transpose_block(const float* src, std::int64_t sld, float* dst, std::int64_t dld) {
  __m256 r[8], t[8];
  for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(src + k * sld);
  for (int k = 0; k < 8; k += 2) {  // interleave row pairs: a0 b0 a1 b1 | a4 b4 a5 b5, ...
    t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
    t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
  }
  for (int k = 0; k < 8; k += 4) {  // gather four rows' element per 128-bit lane
    r[k] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int k = 0; k < 4; ++k) {  // rows 0-3 and 4-7 meet across the 128-bit lanes
    _mm256_storeu_ps(dst + k * dld, _mm256_permute2f128_ps(r[k], r[k + 4], 0x20));
    _mm256_storeu_ps(dst + (k + 4) * dld, _mm256_permute2f128_ps(r[k], r[k + 4], 0x31));
  }
}

// Three rows of 8 interleaved into 24 contiguous values (C = 3 to NHWC, the RGB input layers),
// and back. Each source vector is permuted so that its elements sit where the three outputs
// want them (a at 0, 3, 6 of the first, 1, 4, 7 of the second, 2, 5 of the third, and so on);
// blends then pick them: 3 permutes and 6 blends per 24 values, where the scalar loop moved one
// value a cycle (cv3 NCHW->NHWC ran at 27% of memcpy).
inline void interleave3(const float* a, const float* b, const float* c, float* out) {
  const __m256 pa = _mm256_permutevar8x32_ps(_mm256_loadu_ps(a), _mm256_setr_epi32(0, 3, 6, 1, 4, 7, 2, 5));
  const __m256 pb = _mm256_permutevar8x32_ps(_mm256_loadu_ps(b), _mm256_setr_epi32(5, 0, 3, 6, 1, 4, 7, 2));
  const __m256 pc = _mm256_permutevar8x32_ps(_mm256_loadu_ps(c), _mm256_setr_epi32(2, 5, 0, 3, 6, 1, 4, 7));
  _mm256_storeu_ps(out, _mm256_blend_ps(_mm256_blend_ps(pa, pb, 0x92), pc, 0x24));
  _mm256_storeu_ps(out + 8, _mm256_blend_ps(_mm256_blend_ps(pa, pb, 0x24), pc, 0x49));
  _mm256_storeu_ps(out + 16, _mm256_blend_ps(_mm256_blend_ps(pa, pb, 0x49), pc, 0x92));
}

inline void deinterleave3(const float* in, float* a, float* b, float* c) {
  const __m256 i0 = _mm256_loadu_ps(in), i1 = _mm256_loadu_ps(in + 8), i2 = _mm256_loadu_ps(in + 16);
  const __m256 ta = _mm256_blend_ps(_mm256_blend_ps(i0, i1, 0x92), i2, 0x24);
  const __m256 tb = _mm256_blend_ps(_mm256_blend_ps(i0, i1, 0x24), i2, 0x49);
  const __m256 tc = _mm256_blend_ps(_mm256_blend_ps(i0, i1, 0x49), i2, 0x92);
  _mm256_storeu_ps(a, _mm256_permutevar8x32_ps(ta, _mm256_setr_epi32(0, 3, 6, 1, 4, 7, 2, 5)));
  _mm256_storeu_ps(b, _mm256_permutevar8x32_ps(tb, _mm256_setr_epi32(1, 4, 7, 2, 5, 0, 3, 6)));
  _mm256_storeu_ps(c, _mm256_permutevar8x32_ps(tc, _mm256_setr_epi32(2, 5, 0, 3, 6, 1, 4, 7)));
}

// The vectorised part of a 3-row (or 3-column) transpose whose 3-wide side is contiguous; returns
// how many columns (rows) it did, the caller's scalar loop does the rest.
template <class T>
std::int64_t transpose_three(const T* src, std::int64_t sld, T* dst, std::int64_t dld,
                             std::int64_t rows, std::int64_t cols) {
  if constexpr (std::is_same_v<T, float>) {
    if (rows == 3 && dld == 3) {
      const std::int64_t done = cols / 8 * 8;
      for (std::int64_t j = 0; j < done; j += 8) interleave3(src + j, src + sld + j, src + 2 * sld + j, dst + 3 * j);
      return done;
    }
    if (cols == 3 && sld == 3) {
      const std::int64_t done = rows / 8 * 8;
      for (std::int64_t i = 0; i < done; i += 8) deinterleave3(src + 3 * i, dst + i, dst + dld + i, dst + 2 * dld + i);
      return done;
    }
  }
  return 0;
}

inline void transpose_block(const double* src, std::int64_t sld, double* dst, std::int64_t dld) {
  const __m256d r0 = _mm256_loadu_pd(src), r1 = _mm256_loadu_pd(src + sld),
                r2 = _mm256_loadu_pd(src + 2 * sld), r3 = _mm256_loadu_pd(src + 3 * sld);
  const __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1),
                t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
  _mm256_storeu_pd(dst, _mm256_permute2f128_pd(t0, t2, 0x20));
  _mm256_storeu_pd(dst + dld, _mm256_permute2f128_pd(t1, t3, 0x20));
  _mm256_storeu_pd(dst + 2 * dld, _mm256_permute2f128_pd(t0, t2, 0x31));
  _mm256_storeu_pd(dst + 3 * dld, _mm256_permute2f128_pd(t1, t3, 0x31));
}
#endif

// The order of the B x B blocks. Down the columns: 32 x 32 tiles, each group of B destination
// rows finished before the next; used for the streamed units' L2 buffer. Column strips: B
// destination rows at a time across a whole unit, written in long runs; the default, it beat
// the tiles by 4-20 points of memcpy's rate (cv6 NHWC->NCHW 53-57% -> 71-74%, cv7 and cv12
// NCHW<->NHWC 37-45% -> 44-52%; cv4 CHWN->NCHW, 36 KiB destination stride, 37% -> 53%). Along
// the rows: B source rows at a time, for two cases:
// - a strided source with few rows (N <= 64 in NCHW->CHWN): 8 of them at a time in long runs,
//   which the prefetchers follow, instead of all of them 128 bytes at a time (cv7 28-38% of
//   memcpy -> 48-61%, cv11 42-46% -> 61-63%, cv12 27-31% -> 57-68%);
// - in cache, a source stride that is a multiple of 4 KiB: every source row of a tile falls in
//   the same L1 set and only 8 fit its 8 ways (cv4 NCHW->CHWN, 36 KiB stride: 30% -> 60%).
enum class Order { down_columns, along_rows, column_strips };

// One tile, src and dst already offset to its corner: full B x B blocks, then the scalar edges.
template <class T>
void transpose_tile(const T* src, std::int64_t sld, T* dst, std::int64_t dld, std::int64_t rows,
                    std::int64_t cols, [[maybe_unused]] Order order = Order::down_columns) {
  constexpr int B = kBlock<T>;
  if constexpr (B > 0) {
    if (rows == 3 && dld == 3) {
      const std::int64_t done = transpose_three(src, sld, dst, dld, rows, cols);
      src += done, dst += done * dld, cols -= done;
    } else if (cols == 3 && sld == 3) {
      const std::int64_t done = transpose_three(src, sld, dst, dld, rows, cols);
      src += done * sld, dst += done, rows -= done;
    }
  }
  if (rows < B) {
    // Too few rows for a block (C = 3 to NHWC): walk the destination in order, so its writes
    // stream and only the `rows` short source rows are read in parallel.
    for (std::int64_t j = 0; j < cols; ++j)
      for (std::int64_t i = 0; i < rows; ++i) dst[j * dld + i] = src[i * sld + j];
    return;
  }
  if constexpr (B > 0) {
    const std::int64_t rows_b = rows / B * B, cols_b = cols / B * B;
    if (order == Order::along_rows) {
      for (std::int64_t i = 0; i < rows_b; i += B)
        for (std::int64_t j = 0; j < cols_b; j += B)
          transpose_block(src + i * sld + j, sld, dst + j * dld + i, dld);
    } else {
      for (std::int64_t j = 0; j < cols_b; j += B)
        for (std::int64_t i = 0; i < rows_b; i += B)
          transpose_block(src + i * sld + j, sld, dst + j * dld + i, dld);
    }
    transpose_scalar(src + cols_b, sld, dst + cols_b * dld, dld, rows_b, cols - cols_b);
    transpose_scalar(src + rows_b * sld, sld, dst + rows_b, dld, rows - rows_b, cols);
  } else {
    transpose_scalar(src, sld, dst, dld, rows, cols);
  }
}

// One unit: 32 x 32 tiles in row-major order, or the whole unit as one tile when a side is
// shorter than a tile, for column strips, and along the rows when the unit has at most 64 rows.
template <class T>
void transpose_unit(const T* src, std::int64_t sld, T* dst, std::int64_t dld, std::int64_t rows,
                    std::int64_t cols, Order order = Order::down_columns) {
  if (rows < kTile || cols < kTile || order == Order::column_strips ||
      (order == Order::along_rows && rows <= 2 * kTile))
    return transpose_tile(src, sld, dst, dld, rows, cols, order);
  for (std::int64_t i = 0; i < rows; i += kTile)
    for (std::int64_t j = 0; j < cols; j += kTile)
      transpose_tile(src + i * sld + j, sld, dst + j * dld + i, dld, std::min(kTile, rows - i),
                     std::min(kTile, cols - j), order);
}

#if defined(__AVX2__)
// Destinations larger than this (half this machine's 32 MiB L3) go around the caches, as large
// memcpys do: with ordinary stores every destination line is first read from DRAM
// (read-for-ownership), a third more traffic than a streaming copy.
constexpr std::int64_t kStreamBytes = 16 << 20;
constexpr bool kCanStream = true;

// The unit is transposed into an L1/L2-resident buffer, then each destination run (unit_r
// elements, contiguous) is written with non-temporal stores, its unaligned ends with ordinary
// ones.
template <class T>
void transpose_unit_streamed(const T* src, std::int64_t sld, T* dst, std::int64_t dld,
                             std::int64_t rows, std::int64_t cols) {
  alignas(64) static thread_local T buffer[kUnitElems];
  transpose_unit(src, sld, buffer, rows, rows, cols);
  const std::size_t run = static_cast<std::size_t>(rows) * sizeof(T);
  for (std::int64_t j = 0; j < cols; ++j) {
    const char* in = reinterpret_cast<const char*>(buffer + j * rows);
    char* out = reinterpret_cast<char*>(dst + j * dld);
    // Only whole 64-byte lines are streamed: a partly streamed line costs a read-modify-write
    // in memory.
    const std::size_t head = std::min(run, (64 - reinterpret_cast<std::uintptr_t>(out) % 64) % 64);
    const std::size_t lines = (run - head) / 64, tail = head + lines * 64;
    std::copy(in, in + head, out);
    for (std::size_t v = 0; v < 2 * lines; ++v)
      _mm256_stream_si256(reinterpret_cast<__m256i*>(out + head) + v,
                          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + head) + v));
    std::copy(in + tail, in + run, out + tail);
  }
}

inline void stream_fence() { _mm_sfence(); }
#else
constexpr std::int64_t kStreamBytes = 0;
constexpr bool kCanStream = false;
template <class T>
void transpose_unit_streamed(const T*, std::int64_t, T*, std::int64_t, std::int64_t, std::int64_t) {}
inline void stream_fence() {}
#endif

template <class T>
void transpose_batched(const T* src, T* dst, const TransposeShape& t) {
  // rows or cols of 1 (C = 1 to or from NHWC): each batch item is a plain copy.
  if ((t.cols == 1 && t.src_ld == 1) || (t.rows == 1 && t.dst_ld == 1)) {
    const std::int64_t n = t.rows * t.cols;
    tbb::parallel_for(std::int64_t{0}, t.batch, [&](std::int64_t b) {
      std::copy(src + b * t.src_batch_step, src + b * t.src_batch_step + n,
                dst + b * t.dst_batch_step);
    });
    return;
  }
  if (t.batch == 0 || t.rows == 0 || t.cols == 0) return;
  const std::int64_t short_c = std::min(t.cols, kUnit);
  const std::int64_t unit_r = std::min(t.rows, std::max(kUnit, kUnitElems / short_c));
  const std::int64_t unit_c = std::min(t.cols, std::max(kUnit, kUnitElems / unit_r));
  const std::int64_t row_units = (t.rows + unit_r - 1) / unit_r;
  const std::int64_t col_units = (t.cols + unit_c - 1) / unit_c;
  const std::int64_t per_batch = row_units * col_units;
  // Streaming needs long runs in the destination (a unit of at least 64 rows) that start on a
  // cache line (else most of their lines are only partly streamed: cv6 NHWC->NCHW, 3025-element
  // rows, ran at 13-31% of memcpy streamed against about 45% not), and a tiled unit (a unit
  // with a short side already writes its destination in order).
  const auto sz = static_cast<std::int64_t>(sizeof(T));
  const std::int64_t bytes = t.batch * t.rows * t.cols * sz;
  const bool stream = kCanStream && bytes > kStreamBytes && unit_r >= kUnit / 2 &&
                      unit_c >= kTile && t.dst_ld * sz % 64 == 0 &&
                      (row_units == 1 || unit_r * sz % 64 == 0);
  // The block order (Order).
  const auto aliases = [&](std::int64_t ld) { return ld * sz % 4096 == 0; };
  Order order = Order::down_columns;
  if (!stream)
    order = (t.rows <= 2 * kTile && t.src_ld > t.dst_ld) || (bytes <= kStreamBytes && aliases(t.src_ld))
                ? Order::along_rows
                : Order::column_strips;
  // One flat range over every unit of every batch item, so both threads get work whether the
  // batch is 1 (CHWN <-> NCHW) or the units per item are few (small C*H*W).
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, t.batch * per_batch),
                    [&](const tbb::blocked_range<std::int64_t>& r) {
    for (std::int64_t k = r.begin(); k < r.end(); ++k) {
      const std::int64_t b = k / per_batch, ri = k % per_batch / col_units, ci = k % col_units;
      const std::int64_t i0 = ri * unit_r, j0 = ci * unit_c;
      const T* s = src + b * t.src_batch_step + i0 * t.src_ld + j0;
      T* d = dst + b * t.dst_batch_step + j0 * t.dst_ld + i0;
      const std::int64_t rows = std::min(unit_r, t.rows - i0), cols = std::min(unit_c, t.cols - j0);
      if (stream)
        transpose_unit_streamed(s, t.src_ld, d, t.dst_ld, rows, cols);
      else
        transpose_unit(s, t.src_ld, d, t.dst_ld, rows, cols, order);
    }
    if (stream) stream_fence();  // the streamed stores are visible before the range completes
  });
}

}  // namespace

TransposeShape transpose_for(Layout from, Layout to, const Shape& shape) {
  const std::int64_t n = shape[0], c = shape[1], s = shape[2] * shape[3];
  const auto key = [](Layout a, Layout b) { return static_cast<int>(a) * 3 + static_cast<int>(b); };
  const int k = key(from, to);
  if (k == key(Layout::NCHW, Layout::CHWN)) return {1, n, c * s, c * s, n, 0, 0};
  if (k == key(Layout::CHWN, Layout::NCHW)) return {1, c * s, n, n, c * s, 0, 0};
  if (k == key(Layout::NCHW, Layout::NHWC)) return {n, c, s, s, c, c * s, c * s};
  if (k == key(Layout::NHWC, Layout::NCHW)) return {n, s, c, c, s, c * s, c * s};
  if (k == key(Layout::NHWC, Layout::CHWN)) return {s, n, c, s * c, s * n, c, n};
  if (k == key(Layout::CHWN, Layout::NHWC)) return {s, c, n, s * n, s * c, n, c};
  TUNECNN_FAIL("no transform from ", to_string(from), " to ", to_string(to));
}

void convert_layout_into(const Tensor& src, Tensor& dst) {
  TUNECNN_CHECK(src.defined() && dst.defined(), "convert_layout: undefined tensor");
  check_same_device("convert_layout", src, dst);
  TUNECNN_CHECK(src.shape() == dst.shape() && src.dtype() == dst.dtype(), "convert_layout: ",
                src.describe(), " and ", dst.describe(), " differ in shape or dtype");
  if (src.layout() == dst.layout()) {
    dst.copy_from(src);
    return;
  }
  TUNECNN_CHECK(src.ndim() == 4, "only 4-D tensors have a ", to_string(dst.layout()),
                " layout, got ", src.describe());
  TUNECNN_ON_CUDA(src, cuda::convert_layout_into(src, dst));
  const Shape& s = src.shape();
  const TransposeShape t = transpose_for(src.layout(), dst.layout(), s);
  dispatch_dtype(src.dtype(), [&]<class T>() { transpose_batched(src.data<T>(), dst.data<T>(), t); });
}

void convert_layout_naive_into(const Tensor& src, Tensor& dst) {
  check_same_device("convert_layout_naive_into", src, dst);
  TUNECNN_ON_CUDA(src, cuda::convert_layout_naive_into(src, dst));
  dst.copy_from(convert_layout_reference(src, dst.layout()));
}

Tensor convert_layout(const Tensor& src, Layout layout) {
  TUNECNN_CHECK(src.defined(), "convert_layout: undefined tensor");
  if (src.layout() == layout) return src;
  Tensor dst = Tensor::empty(src.shape(), src.dtype(), src.device(), layout);
  convert_layout_into(src, dst);
  return dst;
}

}  // namespace tunecnn
