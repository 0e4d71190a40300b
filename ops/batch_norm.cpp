// Batch normalisation over a [outer, C, inner] view of the input's memory: NCHW is outer N and
// inner H*W, CHWN outer 1 and inner H*W*N, NHWC outer N*H*W and inner 1. Two loop shapes serve
// the three layouts. Runs: each (outer, channel) run of `inner` values is contiguous and is cut
// into L1-sized pieces, a TBB unit each. Rows (NHWC, and short runs over many rows): memory is
// `outer` rows of C * inner values, vectorised along the row, in fixed tasks of whole channels
// by whole row blocks. Statistics are sums of deviations from a shift near the mean (a piece's
// own mean while it sits in L1, the corrected two-pass method; for a task, its first block's
// channel means), summed in T over a piece or block and in double beyond, so they are sound for
// large means at one pass over memory. Pieces and tasks fill their own partial slots, merged
// afterwards in memory order, so the results do not depend on scheduling. Training forward reads
// x twice and writes y; backward reads x and dy twice and writes dx. The closure keeps the
// per-channel mean and 1/std: x is the op's input, which the graph keeps anyway.
#include "ops/batch_norm.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "core/device.h"
#include "ops/channel_view.h"
#include "ops/eigen_core.h"
#include "ops/relu.h"
#include "ops/relu_functors.h"

namespace tunecnn {
namespace {

// A piece of a run stays in L1 between the passes over it.
constexpr std::int64_t kPieceBytes = 16 << 10;
// Runs shorter than this over at least kMinRows rows take the rows shape: per-run overheads
// would outweigh the work (NCHW 16x1024x7x7 forward+backward: 1.3 ms as pieces, 1.0 ms as rows;
// at 14x14 or at N < 8 pieces win).
constexpr std::int64_t kMinRun = 64;
constexpr std::int64_t kMinRows = 8;
// The rows shape sums this many rows in the element type before adding into double; a task
// spans whole channels of about kChunkColumns columns and about kTaskElements values.
constexpr std::int64_t kBlockRows = 64;
constexpr std::int64_t kChunkColumns = 1024;
constexpr std::int64_t kTaskElements = 1 << 16;
// Elementwise work below this size per task is cheaper than waking a second thread.
constexpr std::int64_t kGrain = 1 << 15;

template <class T>
using Vec = Eigen::Array<T, Eigen::Dynamic, 1>;
template <class T>
using ConstVec = Eigen::Map<const Vec<T>>;
template <class T>
using MutVec = Eigen::Map<Vec<T>>;
// Rows of a task: column r of the map is a stretch of memory row r.
template <class T>
using ConstRows =
    Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic>, 0, Eigen::OuterStride<>>;
template <class T>
using MutRows =
    Eigen::Map<Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic>, 0, Eigen::OuterStride<>>;

struct View {
  std::int64_t outer, channels, inner;
  std::int64_t per_channel() const { return outer * inner; }
  std::int64_t width() const { return channels * inner; }  // a row, in the rows shape
  bool rows_shape() const { return inner == 1 || (inner < kMinRun && outer >= kMinRows); }
};

View view_of(const Tensor& x) {
  const ChannelView c = channel_view(x, "batch_norm");
  return {c.outer, c.channels, c.inner};
}

// The runs shape: every run cut into `count` pieces of at most `length` elements, numbered
// (outer, channel, piece) in memory order.
struct Pieces {
  View v;
  std::int64_t count, length;

  Pieces(const View& view, std::int64_t max_length) : v(view) {
    count = (v.inner + max_length - 1) / max_length;
    length = (v.inner + count - 1) / count;
  }
  std::int64_t units() const { return v.outer * v.channels * count; }
  std::int64_t channel(std::int64_t u) const { return (u / count) % v.channels; }
  std::int64_t offset(std::int64_t u) const { return (u / count) * v.inner + (u % count) * length; }
  std::int64_t size(std::int64_t u) const {
    return std::min(length, v.inner - (u % count) * length);
  }
};

template <class T>
std::int64_t piece_elements() {
  return kPieceBytes / static_cast<std::int64_t>(sizeof(T));
}

// The rows shape: `outer` rows of C * inner values, a channel's values `inner` adjacent columns.
// Tasks are (row range, channel range) rectangles, numbered row range first.
struct RowTask {
  std::int64_t row_task, first_row, end_row, first_channel, end_channel;
};

struct RowTasks {
  View v;
  std::int64_t group_channels, groups, rows_per_task, row_tasks;

  explicit RowTasks(const View& view) : v(view) {
    group_channels = std::clamp<std::int64_t>(kChunkColumns / v.inner, 1, v.channels);
    groups = (v.channels + group_channels - 1) / group_channels;
    const std::int64_t blocks =
        std::max<std::int64_t>(1, kTaskElements / (group_channels * v.inner * kBlockRows));
    rows_per_task = blocks * kBlockRows;
    row_tasks = (v.outer + rows_per_task - 1) / rows_per_task;
  }
  std::int64_t count() const { return row_tasks * groups; }
  RowTask operator[](std::int64_t t) const {
    const std::int64_t r = t / groups, g = t % groups;
    return {r, r * rows_per_task, std::min(v.outer, (r + 1) * rows_per_task), g * group_channels,
            std::min(v.channels, (g + 1) * group_channels)};
  }
};

// Rows [first_row, first_row + rows) of task k's columns.
template <class T>
ConstRows<T> rows_of(const T* data, const View& v, const RowTask& k, std::int64_t first_row,
                     std::int64_t rows) {
  return ConstRows<T>(data + first_row * v.width() + k.first_channel * v.inner,
                      (k.end_channel - k.first_channel) * v.inner, rows,
                      Eigen::OuterStride<>(v.width()));
}

template <class T>
MutRows<T> rows_of(T* data, const View& v, const RowTask& k, std::int64_t first_row,
                   std::int64_t rows) {
  return MutRows<T>(data + first_row * v.width() + k.first_channel * v.inner,
                    (k.end_channel - k.first_channel) * v.inner, rows,
                    Eigen::OuterStride<>(v.width()));
}

// Calls block(first_row, row_count) over the task's rows in blocks of kBlockRows.
template <class BlockFn>
void for_blocks(const RowTask& k, BlockFn block) {
  for (std::int64_t row = k.first_row; row < k.end_row; row += kBlockRows)
    block(row, std::min(kBlockRows, k.end_row - row));
}

// Per-channel values repeated over the channel's columns of a row, for the rows shape.
template <class T>
Vec<T> per_column(const Vec<T>& per_channel, std::int64_t inner) {
  if (inner == 1) return per_channel;
  Vec<T> out(per_channel.size() * inner);
  for (Eigen::Index c = 0; c < per_channel.size(); ++c)
    out.segment(c * inner, inner).setConstant(per_channel[c]);
  return out;
}

// A task's column sums, summed over each channel's columns.
template <class S>
Vec<S> per_channel(const Vec<S>& columns, std::int64_t inner) {
  if (inner == 1) return columns;
  const Eigen::Index channels = columns.size() / inner;
  return Eigen::Map<const Eigen::Array<S, Eigen::Dynamic, Eigen::Dynamic>>(columns.data(), inner,
                                                                           channels)
      .colwise()
      .sum()
      .transpose();
}

// Runs piece(channel, offset, length) over every piece, or rows(task) over every row task; for
// passes whose units write disjoint outputs.
template <class T, class PieceFn, class RowsFn>
void for_each_unit(const View& v, PieceFn piece, RowsFn rows) {
  if (!v.rows_shape()) {
    const Pieces p(v, piece_elements<T>());
    const std::int64_t grain = std::max<std::int64_t>(1, kGrain / p.length);
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, p.units(), grain),
                      [&](const tbb::blocked_range<std::int64_t>& r) {
                        for (std::int64_t u = r.begin(); u < r.end(); ++u)
                          piece(p.channel(u), p.offset(u), p.size(u));
                      });
    return;
  }
  const RowTasks tasks(v);
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, tasks.count(), 1),
                    [&](const tbb::blocked_range<std::int64_t>& r) {
                      for (std::int64_t t = r.begin(); t < r.end(); ++t) rows(tasks[t]);
                    });
}

// Per-channel partials, merged in double: n values' sum s1 and sum of squares s2 of deviations
// from a shift near their mean. Merging moves the part's sums to the total's shift (exact
// algebra, no division), and the shift of the first part stays near the total's mean, so the
// final s2 - s1^2 / n loses no digits to a large mean.
struct Moments {
  double n = 0, shift = 0, s1 = 0, s2 = 0;
  double mean() const { return shift + s1 / n; }
  double m2() const { return std::max(s2 - s1 * s1 / n, 0.0); }  // sum of squared deviations
};

void merge(Moments& into, const Moments& part) {
  if (into.n == 0) {
    into = part;
    return;
  }
  const double d = part.shift - into.shift;
  into.s2 += part.s2 + d * (2 * part.s1 + part.n * d);
  into.s1 += part.s1 + part.n * d;
  into.n += part.n;
}

struct GradSums {
  double dy = 0, dy_xc = 0;  // sum dy, sum dy * (x - mean)
};

void merge(GradSums& into, const GradSums& part) {
  into.dy += part.dy;
  into.dy_xc += part.dy_xc;
}

// A reduction over the channels whose result does not depend on scheduling: each piece or task
// fills its own partial slots, and the slots merge in memory order afterwards.
// piece(channel, offset, length) returns a Partial; task(row_task, Partial* out) fills out[c]
// for the task's channels c.
template <class T, class Partial, class PieceFn, class TaskFn>
std::vector<Partial> reduce_channels(const View& v, PieceFn piece, TaskFn task) {
  const std::int64_t channels = v.channels;
  std::vector<Partial> result(static_cast<std::size_t>(channels));
  if (!v.rows_shape()) {
    const Pieces p(v, piece_elements<T>());
    std::vector<Partial> parts(static_cast<std::size_t>(p.units()));
    const std::int64_t grain = std::max<std::int64_t>(1, kGrain / p.length);
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, p.units(), grain),
                      [&](const tbb::blocked_range<std::int64_t>& r) {
                        for (std::int64_t u = r.begin(); u < r.end(); ++u)
                          parts[u] = piece(p.channel(u), p.offset(u), p.size(u));
                      });
    const Partial* part = parts.data();
    for (std::int64_t o = 0; o < v.outer; ++o)
      for (std::int64_t c = 0; c < channels; ++c)
        for (std::int64_t i = 0; i < p.count; ++i) merge(result[c], *part++);
    return result;
  }
  const RowTasks tasks(v);
  std::vector<Partial> parts(static_cast<std::size_t>(tasks.row_tasks * channels));
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, tasks.count(), 1),
                    [&](const tbb::blocked_range<std::int64_t>& r) {
                      for (std::int64_t t = r.begin(); t < r.end(); ++t) {
                        const RowTask k = tasks[t];
                        task(k, &parts[k.row_task * channels]);
                      }
                    });
  for (std::int64_t t = 0; t < tasks.row_tasks; ++t)
    for (std::int64_t c = 0; c < channels; ++c) merge(result[c], parts[t * channels + c]);
  return result;
}

template <class T>
std::vector<Moments> channel_moments(const T* x, const View& v) {
  const auto piece = [x](std::int64_t, std::int64_t offset, std::int64_t len) {
    const ConstVec<T> a(x + offset, len);
    // The corrected two-pass method: s1 corrects the rounding of the piece's mean.
    const T shift = a.sum() / static_cast<T>(len);
    return Moments{static_cast<double>(len), shift, (a - shift).sum(), (a - shift).square().sum()};
  };
  // Rows: deviations from each channel's mean over the task's first block, summed per block in
  // T and per task in double. That shift lies near the task's mean, so the sums do not cancel
  // for large means, and each task reads its values once (the first block twice, from cache).
  const auto task = [x, &v](const RowTask& k, Moments* out) {
    const std::int64_t inner = v.inner, channels = k.end_channel - k.first_channel;
    const std::int64_t columns = channels * inner;
    Vec<T> shift(columns), s1(columns), s2(columns);
    Eigen::ArrayXd sum1 = Eigen::ArrayXd::Zero(columns), sum2 = Eigen::ArrayXd::Zero(columns);
    Vec<T> channel_shift;
    for_blocks(k, [&](std::int64_t row, std::int64_t rows) {
      const ConstRows<T> a = rows_of(x, v, k, row, rows);
      if (row == k.first_row) {
        s1.setZero();
        for (std::int64_t r = 0; r < rows; ++r) s1 += a.col(r);
        channel_shift = per_channel(s1, inner) / static_cast<T>(rows * inner);
        shift = per_column(channel_shift, inner);
      }
      s1.setZero();
      s2.setZero();
      for (std::int64_t r = 0; r < rows; ++r) {
        s1 += a.col(r) - shift;
        s2 += (a.col(r) - shift).square();
      }
      sum1 += s1.template cast<double>();
      sum2 += s2.template cast<double>();
    });
    const Eigen::ArrayXd c1 = per_channel(sum1, inner), c2 = per_channel(sum2, inner);
    const double n = static_cast<double>((k.end_row - k.first_row) * inner);
    for (std::int64_t c = 0; c < channels; ++c)
      out[k.first_channel + c] = Moments{n, channel_shift[c], c1[c], c2[c]};
  };
  return reduce_channels<T, Moments>(v, piece, task);
}

// A per-channel value in double, split into a T part and the T remainder: x - hi - lo keeps the
// digits that x - T(mean) would lose when the mean is large against the spread.
template <class T>
struct Centre {
  Vec<T> hi, lo;
  explicit Centre(const std::vector<double>& mean) : hi(mean.size()), lo(mean.size()) {
    for (std::size_t c = 0; c < mean.size(); ++c) {
      hi[c] = static_cast<T>(mean[c]);
      lo[c] = static_cast<T>(mean[c] - static_cast<double>(hi[c]));
    }
  }
};

template <class T>
Vec<T> to_vec(const std::vector<double>& values) {
  Vec<T> out(values.size());
  for (std::size_t c = 0; c < values.size(); ++c) out[c] = static_cast<T>(values[c]);
  return out;
}

template <class T>
std::vector<double> to_doubles(const Tensor& t) {
  const T* p = t.data<T>();
  return std::vector<double>(p, p + t.numel());
}

// A ReLU fused after batch norm (batch_norm_relu): the output clipped to [0, top], top infinite
// for a plain ReLU. Its backward needs dy where batch norm's own output z = (x - mean) * scale +
// shift lies inside (0, top). z is recomputed from x, which backward reads anyway, rather than
// read from y: one tensor less to stream through each backward pass.
template <class T>
struct FusedRelu {
  bool on = false;
  T top = std::numeric_limits<T>::infinity();
  Vec<T> scale, shift;  // per channel, those of the forward pass
};

// The same rules as relu_forward and relu_backward, vectorised (ops/relu_functors.h), so the
// results match the two ops.
template <class T, class Z>
auto clipped(const Z& z, T top) {
  return z.unaryExpr(ReluClip<T>{top});
}
template <class T, class G, class Z>
auto gated(const G& dy, const Z& z, T top) {
  return dy.binaryExpr(z, ReluGate<T>{top});
}

// Per-channel parameters: read per channel by pieces; in the rows shape each task expands its
// channels' values over their columns, an L1-sized copy (whole rows can be as large as the
// tensor).
template <class T>
struct Params {
  std::int64_t inner;
  std::vector<Vec<T>> values;

  Params(const View& v, std::initializer_list<Vec<T>> per_channel)
      : inner(v.inner), values(per_channel) {}
  T at(std::size_t i, std::int64_t channel) const { return values[i][channel]; }
  Vec<T> columns(std::size_t i, const RowTask& k) const {
    return per_column(Vec<T>(values[i].segment(k.first_channel, k.end_channel - k.first_channel)),
                      inner);
  }
};

// out = (in - centre) * scale + shift, per channel; clipped to [0, top] with `clip`.
template <class T>
void channel_affine(const T* in, T* out, const View& v, const Centre<T>& centre,
                    const Vec<T>& scale, const Vec<T>& shift, bool clip = false,
                    T top = std::numeric_limits<T>::infinity()) {
  const Params<T> p(v, {centre.hi, centre.lo, scale, shift});
  for_each_unit<T>(
      v,
      [&](std::int64_t c, std::int64_t offset, std::int64_t len) {
        const ConstVec<T> x(in + offset, len);
        const auto z = ((x - p.at(0, c)) - p.at(1, c)) * p.at(2, c) + p.at(3, c);
        if (clip)
          MutVec<T>(out + offset, len) = clipped(z, top);
        else
          MutVec<T>(out + offset, len) = z;
      },
      [&](const RowTask& k) {
        const Vec<T> hi = p.columns(0, k), lo = p.columns(1, k), a = p.columns(2, k),
                     b = p.columns(3, k);
        const std::int64_t rows = k.end_row - k.first_row;
        const ConstRows<T> x = rows_of(in, v, k, k.first_row, rows);
        MutRows<T> y = rows_of(out, v, k, k.first_row, rows);
        for (std::int64_t r = 0; r < rows; ++r) {
          if (clip)
            y.col(r) = clipped(((x.col(r) - hi) - lo) * a + b, top);
          else
            y.col(r) = ((x.col(r) - hi) - lo) * a + b;
        }
      });
}

// Per channel: sum dy and sum dy * (x - centre), dy gated by a fused ReLU.
template <class T>
std::vector<GradSums> channel_grad_sums(const T* dy, const T* x, const View& v,
                                        const Centre<T>& centre, const FusedRelu<T>& relu) {
  const Params<T> p = relu.on ? Params<T>(v, {centre.hi, centre.lo, relu.scale, relu.shift})
                              : Params<T>(v, {centre.hi, centre.lo});
  const auto piece = [&](std::int64_t c, std::int64_t offset, std::int64_t len) {
    const ConstVec<T> g(dy + offset, len), a(x + offset, len);
    const auto xc = (a - p.at(0, c)) - p.at(1, c);
    if (!relu.on) return GradSums{g.sum(), (g * xc).sum()};
    // A piece is L1-sized: recomputing the gate for the second sum is cheaper than storing it.
    const auto gz = gated(g, xc * p.at(2, c) + p.at(3, c), relu.top);
    return GradSums{gz.sum(), (gz * xc).sum()};
  };
  const auto task = [&](const RowTask& k, GradSums* out) {
    const Vec<T> hi = p.columns(0, k), lo = p.columns(1, k);
    const Vec<T> scale = relu.on ? p.columns(2, k) : Vec<T>(), shift = relu.on ? p.columns(3, k) : Vec<T>();
    const std::int64_t columns = hi.size();
    Vec<T> sdy(columns), sdx(columns), xc(columns), gz(columns);
    Eigen::ArrayXd sum_dy = Eigen::ArrayXd::Zero(columns), sum_dx = Eigen::ArrayXd::Zero(columns);
    for_blocks(k, [&](std::int64_t row, std::int64_t rows) {
      const ConstRows<T> g = rows_of(dy, v, k, row, rows), a = rows_of(x, v, k, row, rows);
      sdy.setZero();
      sdx.setZero();
      for (std::int64_t r = 0; r < rows; ++r) {
        if (relu.on) {
          xc = (a.col(r) - hi) - lo;
          gz = gated(g.col(r), xc * scale + shift, relu.top);
          sdy += gz;
          sdx += gz * xc;
          continue;
        }
        sdy += g.col(r);
        sdx += g.col(r) * ((a.col(r) - hi) - lo);
      }
      sum_dy += sdy.template cast<double>();
      sum_dx += sdx.template cast<double>();
    });
    const Eigen::ArrayXd c_dy = per_channel(sum_dy, v.inner), c_dx = per_channel(sum_dx, v.inner);
    for (std::int64_t c = 0; c < c_dy.size(); ++c)
      out[k.first_channel + c] = GradSums{c_dy[c], c_dx[c]};
  };
  return reduce_channels<T, GradSums>(v, piece, task);
}

// dx = dy * a + (x - centre) * p + q, per channel, dy gated by a fused ReLU: training backward
// in one pass.
template <class T>
void channel_grad_input(const T* dy, const T* x, T* dx, const View& v, const Centre<T>& centre,
                        const Vec<T>& a, const Vec<T>& p, const Vec<T>& q,
                        const FusedRelu<T>& relu) {
  // With a fused ReLU, `a` is also the forward's scale: the gate is xc * a + shift.
  const Params<T> pr = relu.on ? Params<T>(v, {centre.hi, centre.lo, a, p, q, relu.shift})
                               : Params<T>(v, {centre.hi, centre.lo, a, p, q});
  for_each_unit<T>(
      v,
      [&](std::int64_t c, std::int64_t offset, std::int64_t len) {
        const ConstVec<T> g(dy + offset, len), xin(x + offset, len);
        const auto xc = (xin - pr.at(0, c)) - pr.at(1, c);
        if (relu.on)
          MutVec<T>(dx + offset, len) =
              gated(g, xc * pr.at(2, c) + pr.at(5, c), relu.top) * pr.at(2, c) +
              xc * pr.at(3, c) + pr.at(4, c);
        else
          MutVec<T>(dx + offset, len) = g * pr.at(2, c) + xc * pr.at(3, c) + pr.at(4, c);
      },
      [&](const RowTask& k) {
        const Vec<T> hi = pr.columns(0, k), lo = pr.columns(1, k), ca = pr.columns(2, k),
                     cp = pr.columns(3, k), cq = pr.columns(4, k);
        const Vec<T> shift = relu.on ? pr.columns(5, k) : Vec<T>();
        const std::int64_t rows = k.end_row - k.first_row;
        const ConstRows<T> g = rows_of(dy, v, k, k.first_row, rows),
                           xr = rows_of(x, v, k, k.first_row, rows);
        MutRows<T> d = rows_of(dx, v, k, k.first_row, rows);
        Vec<T> xc(hi.size());
        for (std::int64_t r = 0; r < rows; ++r) {
          if (!relu.on) {
            d.col(r) = g.col(r) * ca + ((xr.col(r) - hi) - lo) * cp + cq;
            continue;
          }
          xc = (xr.col(r) - hi) - lo;
          d.col(r) = gated(g.col(r), xc * ca + shift, relu.top) * ca + xc * cp + cq;
        }
      });
}

// Batch norm's output (+ ReLU) from its input and the forward's per-channel values: the forward
// pass, and the rebuild of a released output (Variable::set_recompute).
struct ChannelAffine {
  std::vector<double> mean, scale, shift;
  std::optional<double> relu_cap;
};

Tensor normalise(const Tensor& input, const ChannelAffine& a) {
  Tensor y = Tensor::empty_like(input);
  dispatch_dtype(input.dtype(), [&]<class T>() {
    channel_affine(input.data<T>(), y.data<T>(), view_of(input), Centre<T>(a.mean), to_vec<T>(a.scale),
                   to_vec<T>(a.shift), a.relu_cap.has_value(), static_cast<T>(a.relu_cap.value_or(kNoCap)));
  });
  return y;
}

void check_channel_tensor(const Tensor& t, const char* what, const Tensor& x) {
  TUNECNN_CHECK(t.defined(), "batch_norm: ", what, " is undefined");
  TUNECNN_CHECK(t.ndim() == 1 && t.dim(0) == x.dim(1) && t.dtype() == x.dtype(),
                "batch_norm: ", what, " ", t.describe(), " does not match the ", x.dim(1),
                " channels of input ", x.describe());
}

void check_inputs(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& mean,
                  const Tensor& var) {
  TUNECNN_CHECK(x.ndim() == 4, "batch_norm expects a 4-D input [N, C, H, W], got ",
                shape_str(x.shape()));
  check_channel_tensor(gamma, "weight", x);
  check_channel_tensor(beta, "bias", x);
  check_channel_tensor(mean, "running_mean", x);
  check_channel_tensor(var, "running_var", x);
}

// What backward needs besides the inputs: the forward's per-channel affine (its centre, its scale
// gamma / std, and with a fused ReLU the shift and cap that recompute the output gating dy) and
// 1/std.
struct SavedStats {
  ChannelAffine affine;
  std::vector<double> invstd;
  double count;  // values per channel
  bool training;
};

template <class T>
void batch_norm_backward(std::vector<Variable>& in, const Tensor& dy, const SavedStats& s) {
  const Tensor& x = in[0].data();
  TUNECNN_CHECK(dy.layout() == x.layout() && dy.numel() == x.numel(),
                "batch_norm backward: ", dy.describe(), " does not match input ", x.describe());
  const View v = view_of(x);
  const bool need_x = in[0].requires_grad();
  const bool need_params = in[1].requires_grad() || in[2].requires_grad();
  const Centre<T> centre(s.affine.mean);
  const std::vector<double>& a = s.affine.scale;  // gamma / std
  const std::size_t channels = a.size();
  FusedRelu<T> relu;
  if (s.affine.relu_cap)
    relu = {true, static_cast<T>(*s.affine.relu_cap), to_vec<T>(a), to_vec<T>(s.affine.shift)};
  std::vector<GradSums> sums;
  if (s.training || need_params) sums = channel_grad_sums(dy.data<T>(), x.data<T>(), v, centre, relu);
  if (need_params) {
    Tensor dgamma = Tensor::empty({static_cast<std::int64_t>(channels)}, x.dtype());
    Tensor dbeta = Tensor::empty_like(dgamma);
    for (std::size_t c = 0; c < channels; ++c) {
      dgamma.data<T>()[c] = static_cast<T>(sums[c].dy_xc * s.invstd[c]);
      dbeta.data<T>()[c] = static_cast<T>(sums[c].dy);
    }
    in[1].add_grad(dgamma);
    in[2].add_grad(dbeta);
  }
  if (!need_x) return;
  Tensor dx = Tensor::empty_like(x);
  if (!s.training && relu.on) {
    // dx = gated dy * gamma / std.
    const Vec<T> zero = Vec<T>::Zero(channels);
    channel_grad_input(dy.data<T>(), x.data<T>(), dx.data<T>(), v, centre, to_vec<T>(a), zero,
                       zero, relu);
  } else if (!s.training) {
    // The statistics are constants: dx = dy * gamma / std.
    const Centre<T> none(std::vector<double>(channels, 0.0));
    channel_affine(dy.data<T>(), dx.data<T>(), v, none, to_vec<T>(a),
                   Vec<T>(Vec<T>::Zero(channels)));
  } else {
    // dx = a/M * (M dy - sum dy - xhat sum(dy xhat)) = a dy + p (x - mean) + q.
    std::vector<double> p(channels), q(channels);
    for (std::size_t c = 0; c < channels; ++c) {
      p[c] = -a[c] * s.invstd[c] * s.invstd[c] * sums[c].dy_xc / s.count;
      q[c] = -a[c] * sums[c].dy / s.count;
    }
    channel_grad_input(dy.data<T>(), x.data<T>(), dx.data<T>(), v, centre, to_vec<T>(a),
                       to_vec<T>(p), to_vec<T>(q), relu);
  }
  in[0].add_grad(dx);
}

// Also checked when a layer is built, so a network read from a file (ONNX's momentum and
// epsilon) is refused there rather than failing its first forward pass.
void check_options(const BatchNormOptions& options) {
  TUNECNN_CHECK(options.eps > 0 && options.momentum >= 0 && options.momentum <= 1,
                "batch_norm: eps must be positive and momentum in [0, 1], got eps ", options.eps,
                " momentum ", options.momentum);
}

}  // namespace

namespace {

Variable batch_norm_and_relu(const Variable& x, const Variable& gamma, const Variable& beta,
                           Tensor& running_mean, Tensor& running_var, bool training,
                           const BatchNormOptions& options, std::optional<double> relu_cap);

}  // namespace

Variable batch_norm(const Variable& x, const Variable& gamma, const Variable& beta,
                    Tensor& running_mean, Tensor& running_var, bool training,
                    const BatchNormOptions& options) {
  return batch_norm_and_relu(x, gamma, beta, running_mean, running_var, training, options, std::nullopt);
}

Variable batch_norm_relu(const Variable& x, const Variable& gamma, const Variable& beta,
                         Tensor& running_mean, Tensor& running_var, bool training,
                         const BatchNormOptions& options, double cap) {
  TUNECNN_CHECK(cap > 0, "batch_norm_relu: the cap must be positive, got ", cap);
  return batch_norm_and_relu(x, gamma, beta, running_mean, running_var, training, options, cap);
}

namespace {

Variable batch_norm_and_relu(const Variable& x, const Variable& gamma, const Variable& beta,
                           Tensor& running_mean, Tensor& running_var, bool training,
                           const BatchNormOptions& options, std::optional<double> relu_cap) {
  const Tensor& input = x.data();
  check_inputs(input, gamma.data(), beta.data(), running_mean, running_var);
  check_options(options);
  check_same_device("batch_norm", input, gamma.data(), beta.data(), running_mean, running_var);
  const View v = view_of(input);
  TUNECNN_CHECK(!training || v.per_channel() > 1, "batch_norm in training needs more than one ",
                "value per channel, got input ", input.describe());
  TUNECNN_ON_CUDA(input, cuda::batch_norm(x, gamma, beta, running_mean, running_var, training,
                                          options, relu_cap));
  const std::size_t channels = static_cast<std::size_t>(v.channels);
  SavedStats saved{{std::vector<double>(channels), {}, {}, relu_cap},
                   std::vector<double>(channels),
                   static_cast<double>(v.per_channel()),
                   training};
  ChannelAffine& affine = saved.affine;
  dispatch_dtype(input.dtype(), [&]<class T>() {
    if (training) {
      const std::vector<Moments> m = channel_moments(input.data<T>(), v);
      const double momentum = options.momentum, count = saved.count;
      T* rm = running_mean.data<T>();
      T* rv = running_var.data<T>();
      for (std::size_t c = 0; c < channels; ++c) {
        const double m2 = m[c].m2();
        affine.mean[c] = m[c].mean();
        saved.invstd[c] = 1.0 / std::sqrt(m2 / count + options.eps);
        rm[c] = static_cast<T>((1 - momentum) * rm[c] + momentum * affine.mean[c]);
        rv[c] = static_cast<T>((1 - momentum) * rv[c] + momentum * m2 / (count - 1));
      }
    } else {
      affine.mean = to_doubles<T>(running_mean);
      const std::vector<double> var = to_doubles<T>(running_var);
      for (std::size_t c = 0; c < channels; ++c)
        saved.invstd[c] = 1.0 / std::sqrt(var[c] + options.eps);
    }
    affine.scale = to_doubles<T>(gamma.data());
    for (std::size_t c = 0; c < channels; ++c) affine.scale[c] *= saved.invstd[c];
    affine.shift = to_doubles<T>(beta.data());
  });
  Tensor y = normalise(input, affine);
  const bool recomputable = recompute_activations();
  ChannelAffine rebuild = recomputable ? affine : ChannelAffine{};
  auto backward = [saved = std::move(saved)](std::vector<Variable>& in, const Tensor& dy) {
    dispatch_dtype(dy.dtype(), [&]<class T>() { batch_norm_backward<T>(in, dy, saved); });
  };
  Variable out(std::move(y), {x, gamma, beta}, backward);
  // Rebuilt from the input backward keeps anyway: one pass, bitwise the same values.
  if (recomputable && out.requires_grad())
    // From the Variable, not its tensor: a recomputable input (a depthwise conv's output) is then
    // released too, and rebuilt first.
    out.set_recompute([x, rebuild = std::move(rebuild)] { return normalise(x.data(), rebuild); });
  return out;
}

}  // namespace

BatchNorm2d::BatchNorm2d(int channels, BatchNormOptions options)
    : channels_(channels), options_(options) {
  TUNECNN_CHECK(channels > 0, "BatchNorm2d(", channels, "): channels must be positive");
  check_options(options);
  gamma_ = register_parameter("weight", Tensor::full({channels}, 1.0));
  beta_ = register_parameter("bias", Tensor::zeros({channels}));
  running_mean_ = Tensor::zeros({channels});
  running_var_ = Tensor::full({channels}, 1.0);
  register_buffer("running_mean", running_mean_);
  register_buffer("running_var", running_var_);
}

void BatchNorm2d::check_input(const Tensor& x) const {
  TUNECNN_CHECK(x.ndim() == 4 && x.dim(1) == channels_, describe(), " expects a 4-D input [N, ",
                channels_, ", H, W], got ", x.describe());
}

Variable BatchNorm2d::forward(const Variable& input) {
  check_input(input.data());
  return batch_norm(input, gamma_, beta_, running_mean_, running_var_, is_training(), options_);
}

std::optional<Variable> BatchNorm2d::forward_fused(const Variable& input, const Module& next) {
  const auto* relu = dynamic_cast<const ReLU*>(&next);
  if (relu == nullptr) return std::nullopt;
  check_input(input.data());
  return batch_norm_relu(input, gamma_, beta_, running_mean_, running_var_, is_training(), options_,
                         relu->cap());
}

std::string BatchNorm2d::describe() const {
  return "BatchNorm2d(" + std::to_string(channels_) + ")";
}

}  // namespace tunecnn
