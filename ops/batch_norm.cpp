// Batch normalisation over a [outer, C, inner] view of the input's memory: NCHW is outer N and
// inner H*W, CHWN outer 1 and inner H*W*N, NHWC outer N*H*W and inner 1. Two loop shapes serve
// the three layouts: with inner > 1 each (outer, channel) run is contiguous and is cut into
// L1-sized pieces, a TBB unit each; with inner == 1 memory is rows of C, vectorised across the
// channels, in fixed tasks of whole row blocks. Statistics are sound for large means at one pass
// over memory: a piece's (mean, M2) comes from the corrected two-pass method while it sits in L1,
// a row task's from deviations from its first block's mean, summed in T per block and in double
// per task. Pieces and tasks fill their own partial slots, merged afterwards in memory order by
// Chan et al.'s rule, so the results do not depend on scheduling. Training forward reads x twice
// and writes y; backward reads x and dy twice and writes dx. The closure keeps the per-channel
// mean and 1/std: x is the op's input, which the graph keeps anyway.
#include "ops/batch_norm.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>

// GCC 12's false uninitialised reads inside Eigen's AVX-512 double reductions (GCC PR 105593);
// see ops/softmax/fused.cpp.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>
#pragma GCC diagnostic pop

namespace tunecnn {
namespace {

// A piece of a run stays in L1 between the passes over it.
constexpr std::int64_t kPieceBytes = 16 << 10;
// Rows-shape reductions sum this many rows in the element type before adding into double, and
// give each task about kTaskElements values in whole blocks; task partials merge in row order.
constexpr std::int64_t kBlockRows = 64;
constexpr std::int64_t kTaskElements = 1 << 16;
// Elementwise work below this size per task is cheaper than waking a second thread.
constexpr std::int64_t kGrain = 1 << 15;

template <class T>
using Vec = Eigen::Array<T, Eigen::Dynamic, 1>;
template <class T>
using ConstVec = Eigen::Map<const Vec<T>>;
template <class T>
using MutVec = Eigen::Map<Vec<T>>;
// `rows` rows of C channels: column r of the map is memory row r.
template <class T>
using ConstRows = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic>>;
template <class T>
using MutRows = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic>>;

struct View {
  std::int64_t outer, channels, inner;
  std::int64_t per_channel() const { return outer * inner; }
};

View view_of(const Tensor& x) {
  const std::int64_t n = x.dim(0), c = x.dim(1), hw = x.dim(2) * x.dim(3);
  switch (x.layout()) {
    case Layout::NCHW:
      return {n, c, hw};
    case Layout::CHWN:
      return {1, c, hw * n};
    case Layout::NHWC:
      return {n * hw, c, 1};
  }
  TUNECNN_FAIL("batch_norm: unknown layout of ", x.describe());
}

// The inner > 1 shape: every run cut into `count` pieces of at most `length` elements, numbered
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

// The inner == 1 shape's reduction tasks: rows [t * rows_per_task, (t + 1) * rows_per_task).
struct RowTasks {
  std::int64_t rows, rows_per_task, count;

  explicit RowTasks(const View& v) : rows(v.outer) {
    const std::int64_t blocks =
        std::max<std::int64_t>(1, kTaskElements / (v.channels * kBlockRows));
    rows_per_task = blocks * kBlockRows;
    count = (rows + rows_per_task - 1) / rows_per_task;
  }
  std::int64_t begin(std::int64_t t) const { return t * rows_per_task; }
  std::int64_t end(std::int64_t t) const { return std::min(rows, (t + 1) * rows_per_task); }
};

// Calls block(first_row, row_count) on rows [begin, end) in blocks of kBlockRows.
template <class BlockFn>
void for_blocks(std::int64_t begin, std::int64_t end, BlockFn block) {
  for (std::int64_t row = begin; row < end; row += kBlockRows)
    block(row, std::min(kBlockRows, end - row));
}

// Runs piece(channel, offset, length) over every piece, or rows(first_row, row_count) over
// every task's rows; for passes whose units write disjoint outputs.
template <class T, class PieceFn, class RowsFn>
void for_each_unit(const View& v, PieceFn piece, RowsFn rows) {
  if (v.inner > 1) {
    const Pieces p(v, piece_elements<T>());
    const std::int64_t grain = std::max<std::int64_t>(1, kGrain / p.length);
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, p.units(), grain),
                      [&](const tbb::blocked_range<std::int64_t>& r) {
                        for (std::int64_t u = r.begin(); u < r.end(); ++u)
                          piece(p.channel(u), p.offset(u), p.size(u));
                      });
    return;
  }
  const std::int64_t grain = std::max<std::int64_t>(1, kGrain / v.channels);
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, v.outer, grain),
                    [&](const tbb::blocked_range<std::int64_t>& r) { rows(r.begin(), r.size()); });
}

// Per-channel partials, merged in double.
struct Moments {
  double n = 0, mean = 0, m2 = 0;  // count, mean, sum of squared deviations
};

// Chan, Golub and LeVeque's pairwise update: exact in exact arithmetic, stable in floating point.
void merge(Moments& into, const Moments& part) {
  if (part.n == 0) return;
  const double n = into.n + part.n;
  const double delta = part.mean - into.mean;
  into.mean += delta * (part.n / n);
  into.m2 += part.m2 + delta * delta * (into.n * part.n / n);
  into.n = n;
}

struct GradSums {
  double dy = 0, dy_xc = 0;  // sum dy, sum dy * (x - mean)
};

void merge(GradSums& into, const GradSums& part) {
  into.dy += part.dy;
  into.dy_xc += part.dy_xc;
}

// A reduction over the channels whose result does not depend on scheduling: each piece or task
// fills its own partial slot, and the slots merge in memory order afterwards.
// piece(channel, offset, length) returns a Partial; task(first_row, end_row, Partial* out) fills
// the task's per-channel partials.
template <class T, class Partial, class PieceFn, class TaskFn>
std::vector<Partial> reduce_channels(const View& v, PieceFn piece, TaskFn task) {
  const std::int64_t channels = v.channels;
  std::vector<Partial> result(static_cast<std::size_t>(channels));
  if (v.inner > 1) {
    const Pieces p(v, piece_elements<T>());
    std::vector<Partial> parts(static_cast<std::size_t>(p.units()));
    const std::int64_t grain = std::max<std::int64_t>(1, kGrain / p.length);
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, p.units(), grain),
                      [&](const tbb::blocked_range<std::int64_t>& r) {
                        for (std::int64_t u = r.begin(); u < r.end(); ++u)
                          parts[u] = piece(p.channel(u), p.offset(u), p.size(u));
                      });
    for (std::int64_t u = 0; u < p.units(); ++u) merge(result[p.channel(u)], parts[u]);
    return result;
  }
  const RowTasks tasks(v);
  std::vector<Partial> parts(static_cast<std::size_t>(tasks.count * channels));
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, tasks.count, 1),
                    [&](const tbb::blocked_range<std::int64_t>& r) {
                      for (std::int64_t t = r.begin(); t < r.end(); ++t)
                        task(tasks.begin(t), tasks.end(t), &parts[t * channels]);
                    });
  for (std::int64_t t = 0; t < tasks.count; ++t)
    for (std::int64_t c = 0; c < channels; ++c) merge(result[c], parts[t * channels + c]);
  return result;
}

// A piece's or row block's statistics from its sum s1 and sum of squares s2 of deviations from
// a shift near the mean (the corrected two-pass method: s1 corrects the shift's rounding).
Moments moments_about(double n, double shift, double s1, double s2) {
  return {n, shift + s1 / n, s2 - s1 * s1 / n};
}

template <class T>
std::vector<Moments> channel_moments(const T* x, const View& v) {
  const auto piece = [x](std::int64_t, std::int64_t offset, std::int64_t len) {
    const ConstVec<T> a(x + offset, len);
    const T shift = a.sum() / static_cast<T>(len);
    return moments_about(static_cast<double>(len), shift, (a - shift).sum(),
                         (a - shift).square().sum());
  };
  // Rows: deviations from the task's first block's mean, summed per block in T and per task in
  // double. That shift lies near the task's mean, so the sums do not cancel for large means, and
  // each task reads its rows once (the first block twice, from L1).
  const std::int64_t channels = v.channels;
  const auto task = [x, channels](std::int64_t begin, std::int64_t end, Moments* out) {
    Vec<T> shift = Vec<T>::Zero(channels), s1(channels), s2(channels);
    Eigen::ArrayXd sum1 = Eigen::ArrayXd::Zero(channels), sum2 = Eigen::ArrayXd::Zero(channels);
    for_blocks(begin, end, [&](std::int64_t row, std::int64_t rows) {
      const ConstRows<T> a(x + row * channels, channels, rows);
      if (row == begin) {
        for (std::int64_t r = 0; r < rows; ++r) shift += a.col(r);
        shift /= static_cast<T>(rows);
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
    for (std::int64_t c = 0; c < channels; ++c)
      out[c] = moments_about(static_cast<double>(end - begin), shift[c], sum1[c], sum2[c]);
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

// out = (in - centre) * scale + shift, per channel.
template <class T>
void channel_affine(const T* in, T* out, const View& v, const Centre<T>& centre,
                    const Vec<T>& scale, const Vec<T>& shift) {
  const std::int64_t channels = v.channels;
  for_each_unit<T>(
      v,
      [&](std::int64_t c, std::int64_t offset, std::int64_t len) {
        MutVec<T>(out + offset, len) =
            ((ConstVec<T>(in + offset, len) - centre.hi[c]) - centre.lo[c]) * scale[c] + shift[c];
      },
      [&](std::int64_t row, std::int64_t rows) {
        const ConstRows<T> a(in + row * channels, channels, rows);
        MutRows<T> b(out + row * channels, channels, rows);
        for (std::int64_t r = 0; r < rows; ++r)
          b.col(r) = ((a.col(r) - centre.hi) - centre.lo) * scale + shift;
      });
}

// Per channel: sum dy and sum dy * (x - centre).
template <class T>
std::vector<GradSums> channel_grad_sums(const T* dy, const T* x, const View& v,
                                        const Centre<T>& centre) {
  const auto piece = [&](std::int64_t c, std::int64_t offset, std::int64_t len) {
    const ConstVec<T> g(dy + offset, len), a(x + offset, len);
    return GradSums{g.sum(), (g * ((a - centre.hi[c]) - centre.lo[c])).sum()};
  };
  const std::int64_t channels = v.channels;
  const auto task = [&](std::int64_t begin, std::int64_t end, GradSums* out) {
    Vec<T> sdy(channels), sdx(channels);
    Eigen::ArrayXd sum_dy = Eigen::ArrayXd::Zero(channels), sum_dx = Eigen::ArrayXd::Zero(channels);
    for_blocks(begin, end, [&](std::int64_t row, std::int64_t rows) {
      const ConstRows<T> g(dy + row * channels, channels, rows),
          a(x + row * channels, channels, rows);
      sdy.setZero();
      sdx.setZero();
      for (std::int64_t r = 0; r < rows; ++r) {
        sdy += g.col(r);
        sdx += g.col(r) * ((a.col(r) - centre.hi) - centre.lo);
      }
      sum_dy += sdy.template cast<double>();
      sum_dx += sdx.template cast<double>();
    });
    for (std::int64_t c = 0; c < channels; ++c) out[c] = GradSums{sum_dy[c], sum_dx[c]};
  };
  return reduce_channels<T, GradSums>(v, piece, task);
}

// dx = dy * a + (x - centre) * p + q, per channel: training backward in one pass.
template <class T>
void channel_grad_input(const T* dy, const T* x, T* dx, const View& v, const Centre<T>& centre,
                        const Vec<T>& a, const Vec<T>& p, const Vec<T>& q) {
  const std::int64_t channels = v.channels;
  for_each_unit<T>(
      v,
      [&](std::int64_t c, std::int64_t offset, std::int64_t len) {
        const ConstVec<T> xc(x + offset, len);
        MutVec<T>(dx + offset, len) = ConstVec<T>(dy + offset, len) * a[c] +
                                      ((xc - centre.hi[c]) - centre.lo[c]) * p[c] + q[c];
      },
      [&](std::int64_t row, std::int64_t rows) {
        const ConstRows<T> g(dy + row * channels, channels, rows),
            xr(x + row * channels, channels, rows);
        MutRows<T> d(dx + row * channels, channels, rows);
        for (std::int64_t r = 0; r < rows; ++r)
          d.col(r) = g.col(r) * a + ((xr.col(r) - centre.hi) - centre.lo) * p + q;
      });
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

// What backward needs besides the inputs: per channel the centre and 1/std of the forward pass.
struct SavedStats {
  std::vector<double> mean, invstd;
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
  const std::vector<double> gamma = to_doubles<T>(in[1].data());
  const Centre<T> centre(s.mean);
  const std::size_t channels = gamma.size();
  std::vector<GradSums> sums;
  if (s.training || need_params) sums = channel_grad_sums(dy.data<T>(), x.data<T>(), v, centre);
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
  std::vector<double> a(channels);
  for (std::size_t c = 0; c < channels; ++c) a[c] = gamma[c] * s.invstd[c];
  if (!s.training) {
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
                       to_vec<T>(p), to_vec<T>(q));
  }
  in[0].add_grad(dx);
}

}  // namespace

Variable batch_norm(const Variable& x, const Variable& gamma, const Variable& beta,
                    Tensor& running_mean, Tensor& running_var, bool training,
                    const BatchNormOptions& options) {
  const Tensor& input = x.data();
  check_inputs(input, gamma.data(), beta.data(), running_mean, running_var);
  TUNECNN_CHECK(options.eps > 0 && options.momentum >= 0 && options.momentum <= 1,
                "batch_norm: eps must be positive and momentum in [0, 1], got eps ", options.eps,
                " momentum ", options.momentum);
  const View v = view_of(input);
  const std::size_t channels = static_cast<std::size_t>(v.channels);
  SavedStats saved{std::vector<double>(channels), std::vector<double>(channels),
                   static_cast<double>(v.per_channel()), training};
  Tensor y = Tensor::empty_like(input);
  dispatch_dtype(input.dtype(), [&]<class T>() {
    if (training) {
      TUNECNN_CHECK(v.per_channel() > 1, "batch_norm in training needs more than one value per ",
                    "channel, got input ", input.describe());
      const std::vector<Moments> m = channel_moments(input.data<T>(), v);
      const double momentum = options.momentum, count = saved.count;
      T* rm = running_mean.data<T>();
      T* rv = running_var.data<T>();
      for (std::size_t c = 0; c < channels; ++c) {
        const double m2 = std::max(m[c].m2, 0.0);
        saved.mean[c] = m[c].mean;
        saved.invstd[c] = 1.0 / std::sqrt(m2 / count + options.eps);
        rm[c] = static_cast<T>((1 - momentum) * rm[c] + momentum * m[c].mean);
        rv[c] = static_cast<T>((1 - momentum) * rv[c] + momentum * m2 / (count - 1));
      }
    } else {
      saved.mean = to_doubles<T>(running_mean);
      const std::vector<double> var = to_doubles<T>(running_var);
      for (std::size_t c = 0; c < channels; ++c)
        saved.invstd[c] = 1.0 / std::sqrt(var[c] + options.eps);
    }
    std::vector<double> scale = to_doubles<T>(gamma.data());
    for (std::size_t c = 0; c < channels; ++c) scale[c] *= saved.invstd[c];
    channel_affine(input.data<T>(), y.data<T>(), v, Centre<T>(saved.mean), to_vec<T>(scale),
                   to_vec<T>(to_doubles<T>(beta.data())));
  });
  auto backward = [saved = std::move(saved)](std::vector<Variable>& in, const Tensor& dy) {
    dispatch_dtype(dy.dtype(), [&]<class T>() { batch_norm_backward<T>(in, dy, saved); });
  };
  return Variable(std::move(y), {x, gamma, beta}, backward);
}

BatchNorm2d::BatchNorm2d(int channels, BatchNormOptions options)
    : channels_(channels), options_(options) {
  TUNECNN_CHECK(channels > 0, "BatchNorm2d(", channels, "): channels must be positive");
  gamma_ = register_parameter("weight", Tensor::full({channels}, 1.0));
  beta_ = register_parameter("bias", Tensor::zeros({channels}));
  running_mean_ = Tensor::zeros({channels});
  running_var_ = Tensor::full({channels}, 1.0);
  register_buffer("running_mean", running_mean_);
  register_buffer("running_var", running_var_);
}

Variable BatchNorm2d::forward(const Variable& input) {
  const Tensor& x = input.data();
  TUNECNN_CHECK(x.ndim() == 4 && x.dim(1) == channels_, describe(), " expects a 4-D input [N, ",
                channels_, ", H, W], got ", x.describe());
  return batch_norm(input, gamma_, beta_, running_mean_, running_var_, is_training(), options_);
}

std::string BatchNorm2d::describe() const {
  return "BatchNorm2d(" + std::to_string(channels_) + ")";
}

}  // namespace tunecnn
