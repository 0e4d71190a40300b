// Across-channel LRN over the [outer, C, inner] view of ops/channel_view.h. The work is cut into
// units: one outer index and a chunk of `len` inner positions, all C channels of it. A unit
// gathers what it sums across channels into a packed buffer of C + n - 1 channel runs of `len`
// values with zero runs at both ends, and the window sum of every channel is then n adds of
// shifted slices of that buffer, vectorised along the whole unit. In NHWC (inner 1) a unit is a
// row of C adjacent channels, and with the chunk as wide as the plane (NCHW small maps) the
// unit's runs are adjacent in memory and handled as one. A running window sum (add the channel
// entering, subtract the one leaving) would take 2 operations instead of n - 1, but it runs one
// channel at a time, so it cannot vectorise across NHWC's adjacent channels, and its
// subtractions leave rounding drift; for AlexNet's n = 5 the shifted sums cost about the same.
//
// Each unit writes only its own outputs, and every value is summed in the same order (window
// channel by channel, vectorised across positions) whatever the unit's shape, so results do not
// depend on the thread count and are the same in every layout.
//
// Backward, with s_c = k + alpha/n sum_{window(c)} a^2 and y_c = a_c s_c^-beta:
//   da_j = g_j s_j^-beta - 2 beta alpha/n a_j sum_{c: j in window(c)} g_c y_c / s_c
// (a_c s_c^(-beta-1) = y_c / s_c, as Caffe computes it). j is in window(c) exactly when c is in
// [j - (n-1)/2, j + n/2], the window mirrored, so the same shifted sums serve with the padding
// swapped. The closure keeps s; x and y are the op's input and output, which the graph keeps.
// Under --recompute-activations it does not: backward sums s again from x, unit by unit exactly
// as forward did (the GPU's kernel each s it reads), so the gradient is the same to the bit for
// one more window sum per unit, and AlexNet's two LRN layers keep half as much (116 MiB less at
// batch 64).
#include "ops/lrn.h"

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/device.h"
#include "core/variable.h"
#include "ops/channel_view.h"
#include "ops/eigen_core.h"

namespace tunecnn {
namespace {

// A unit spans about this many values (its packed buffers stay in L2)...
constexpr std::int64_t kUnitElements = 1 << 14;
// ...but runs of at least this many, where the plane has them: shorter runs cost more in
// per-run overhead than they save in cache.
constexpr std::int64_t kMinRun = 64;
// Work below this size per task is cheaper than waking a second thread.
constexpr std::int64_t kGrain = 1 << 15;

template <class T>
using Vec = Eigen::Array<T, Eigen::Dynamic, 1>;
template <class T>
using ConstVec = Eigen::Map<const Vec<T>>;
template <class T>
using MutVec = Eigen::Map<Vec<T>>;

// Channels below and above c in its window.
struct Window {
  std::int64_t below, above;
};

Window window_of(int size) {
  return {size / 2, (size - 1) / 2};
}

struct Unit {
  std::int64_t offset;  // of channel 0's run in the tensor
  std::int64_t len;     // values per channel run
};

// Units numbered (outer, chunk) in memory order; chunks split the plane evenly.
struct Units {
  ChannelView v;
  std::int64_t count, length;

  explicit Units(const ChannelView& view) : v(view) {
    const std::int64_t wanted =
        std::clamp(kUnitElements / v.channels, std::min(kMinRun, v.inner), v.inner);
    count = (v.inner + wanted - 1) / wanted;
    length = (v.inner + count - 1) / count;
  }
  std::int64_t size() const { return v.outer * count; }
  Unit operator[](std::int64_t u) const {
    const std::int64_t chunk = u % count;
    return {(u / count) * v.channels * v.inner + chunk * length,
            std::min(length, v.inner - chunk * length)};
  }
};

// Calls fn(packed, memory, length) over the unit's channel runs: `packed` is the offset in the
// unit's packed buffers, `memory` the offset in the tensor. Runs that are adjacent in memory (the
// chunk is the whole plane) collapse into one call.
template <class Fn>
void for_runs(const ChannelView& v, const Unit& u, Fn fn) {
  if (u.len == v.inner) {
    fn(std::int64_t{0}, u.offset, v.channels * u.len);
    return;
  }
  for (std::int64_t c = 0; c < v.channels; ++c) fn(c * u.len, u.offset + c * v.inner, u.len);
}

// Per-thread buffers, sized for the longest unit.
template <class T>
struct Scratch {
  Vec<T> padded;  // C + n - 1 runs: zeros, the summed quantity per channel, zeros
  Vec<T> base;    // s per channel run
  Vec<T> power;   // s^-beta
  Vec<T> window;  // the window sums

  Scratch(const ChannelView& v, std::int64_t length, int size)
      : padded((v.channels + size - 1) * length),
        base(v.channels * length),
        power(v.channels * length),
        window(v.channels * length) {}
};

// Zeroes the `front` and `back` runs of a unit's padded buffer around its C channel runs.
template <class T>
void zero_padding(Vec<T>& padded, std::int64_t channels, std::int64_t len, std::int64_t front,
                  std::int64_t back) {
  padded.head(front * len).setZero();
  padded.segment((front + channels) * len, back * len).setZero();
}

// window = sum over the n shifted slices of the padded buffer, slice by slice in order.
template <class T>
void window_sums(const Vec<T>& padded, std::int64_t channels, std::int64_t len, int size,
                 Vec<T>& window) {
  const std::int64_t n = channels * len;
  auto out = window.head(n);
  out = padded.head(n);
  for (int d = 1; d < size; ++d) out += padded.segment(d * len, n);
}

// power = base^-beta. AlexNet's beta = 0.75 takes two square roots, exact to rounding and
// vectorised; other betas go through exp and log.
template <class T>
void negative_power(const Vec<T>& base, std::int64_t n, double beta, Vec<T>& power) {
  if (beta == 0.75) {
    auto out = power.head(n);
    out = base.head(n).sqrt();
    out = (out * out.sqrt()).inverse();
  } else {
    power.head(n) = (base.head(n).log() * static_cast<T>(-beta)).exp();
  }
}

// Runs unit(Unit, Scratch&) over every unit. Each thread keeps one scratch for the call: a
// unit's buffers are a few hundred KB, and allocating them per task (fresh pages each time) made
// NCHW four times slower than NHWC, whose units are small.
template <class T, class UnitFn>
void for_each_unit(const ChannelView& v, int size, UnitFn unit) {
  const Units units(v);
  const std::int64_t per_unit = std::max<std::int64_t>(1, v.channels * units.length);
  const std::int64_t grain = std::max<std::int64_t>(1, kGrain / per_unit);
  tbb::enumerable_thread_specific<Scratch<T>> scratch(
      [&] { return Scratch<T>(v, units.length, size); });
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, units.size(), grain),
                    [&](const tbb::blocked_range<std::int64_t>& r) {
                      Scratch<T>& local = scratch.local();
                      for (std::int64_t u = r.begin(); u < r.end(); ++u) unit(units[u], local);
                    });
}

// s of a unit into s.base: k + alpha/n times the window sums of x^2.
template <class T>
void unit_base(const T* x, const ChannelView& v, const Unit& u, const LrnParams& p, Scratch<T>& s) {
  const Window w = window_of(p.size);
  const T k = static_cast<T>(p.k), scale = static_cast<T>(p.alpha / p.size);
  zero_padding(s.padded, v.channels, u.len, w.below, w.above);
  for_runs(v, u, [&](std::int64_t packed, std::int64_t memory, std::int64_t len) {
    s.padded.segment(w.below * u.len + packed, len) = ConstVec<T>(x + memory, len).square();
  });
  window_sums(s.padded, v.channels, u.len, p.size, s.window);
  const std::int64_t n = v.channels * u.len;
  s.base.head(n) = s.window.head(n) * scale + k;
}

// y = x * s^-beta; s is written to `keep` when it is not null.
template <class T>
void lrn_forward(const T* x, T* y, T* keep, const ChannelView& v, const LrnParams& p) {
  for_each_unit<T>(v, p.size, [&](const Unit& u, Scratch<T>& s) {
    const std::int64_t n = v.channels * u.len;
    unit_base(x, v, u, p, s);
    negative_power(s.base, n, p.beta, s.power);
    for_runs(v, u, [&](std::int64_t packed, std::int64_t memory, std::int64_t len) {
      MutVec<T>(y + memory, len) = ConstVec<T>(x + memory, len) * s.power.segment(packed, len);
      if (keep) MutVec<T>(keep + memory, len) = s.base.segment(packed, len);
    });
  });
}

// dx = g * s^-beta - 2 beta alpha/n * x * (mirrored window sums of g * y / s); s from `base`, or
// summed again from x where it is null.
template <class T>
void lrn_backward(const T* x, const T* y, const T* base, const T* g, T* dx, const ChannelView& v,
                  const LrnParams& p) {
  const Window w = window_of(p.size);
  const T coef = static_cast<T>(2 * p.beta * p.alpha / p.size);
  for_each_unit<T>(v, p.size, [&](const Unit& u, Scratch<T>& s) {
    const std::int64_t n = v.channels * u.len;
    if (base)
      for_runs(v, u, [&](std::int64_t packed, std::int64_t memory, std::int64_t len) {
        s.base.segment(packed, len) = ConstVec<T>(base + memory, len);
      });
    else
      unit_base(x, v, u, p, s);
    // The mirrored window: w.above runs of zeros in front, w.below behind.
    zero_padding(s.padded, v.channels, u.len, w.above, w.below);
    for_runs(v, u, [&](std::int64_t packed, std::int64_t memory, std::int64_t len) {
      s.padded.segment(w.above * u.len + packed, len) =
          ConstVec<T>(g + memory, len) * ConstVec<T>(y + memory, len) / s.base.segment(packed, len);
    });
    window_sums(s.padded, v.channels, u.len, p.size, s.window);
    negative_power(s.base, n, p.beta, s.power);
    for_runs(v, u, [&](std::int64_t packed, std::int64_t memory, std::int64_t len) {
      MutVec<T>(dx + memory, len) =
          ConstVec<T>(g + memory, len) * s.power.segment(packed, len) -
          coef * ConstVec<T>(x + memory, len) * s.window.segment(packed, len);
    });
  });
}

void check_params(const LrnParams& p) {
  TUNECNN_CHECK(p.size >= 1 && p.alpha >= 0 && p.k > 0 && std::isfinite(p.alpha) &&
                    std::isfinite(p.k) && std::isfinite(p.beta),
                "local_response_norm: size ", p.size, ", alpha ", p.alpha, ", beta ", p.beta,
                ", k ", p.k, " are not valid; use size >= 1, alpha >= 0, k > 0 (the base ",
                "k + alpha/n * sum a^2 must stay positive) and a finite beta");
}

// y = x * s^-beta, and s into `base` when it is defined; on the input's device.
void forward_on_device(const Tensor& input, Tensor& y, Tensor& base, const LrnParams& params) {
  TUNECNN_ON_CUDA(input, cuda::lrn_forward(input, y, base, params));
  const ChannelView v = channel_view(input, "local_response_norm");
  dispatch_dtype(input.dtype(), [&]<class T>() {
    lrn_forward<T>(input.data<T>(), y.data<T>(), base.defined() ? base.data<T>() : nullptr, v,
                   params);
  });
}

void backward_on_device(const Tensor& x, const Tensor& y, const Tensor& base, const Tensor& dy,
                        Tensor& dx, const LrnParams& params) {
  TUNECNN_ON_CUDA(x, cuda::lrn_backward(x, y, base, dy, dx, params));
  dispatch_dtype(x.dtype(), [&]<class T>() {
    lrn_backward<T>(x.data<T>(), y.data<T>(), base.defined() ? base.data<T>() : nullptr, dy.data<T>(), dx.data<T>(),
                    channel_view(x, "local_response_norm"), params);
  });
}

}  // namespace

Variable local_response_norm(const Variable& x, const LrnParams& params) {
  check_params(params);
  const Tensor& input = x.data();
  channel_view(input, "local_response_norm");  // refuses anything that is not 4-D
  Tensor y = Tensor::empty_like(input);
  // s is needed only when backward will run, and kept only when it will not be summed again.
  const bool backward_runs = grad_enabled() && x.requires_grad();
  Tensor base = backward_runs && !recompute_activations() ? Tensor::empty_like(input) : Tensor();
  forward_on_device(input, y, base, params);
  if (!backward_runs) return Variable(std::move(y));
  auto backward = [y, base, params](std::vector<Variable>& in, const Tensor& dy) {
    const Tensor& a = in[0].data();
    TUNECNN_CHECK(dy.layout() == a.layout() && dy.numel() == a.numel() &&
                      dy.dtype() == a.dtype() && dy.device() == a.device(),
                  "local_response_norm backward: gradient ", dy.describe(),
                  " does not match input ", a.describe());
    Tensor dx = Tensor::empty_like(a);
    backward_on_device(a, y, base, dy, dx, params);
    in[0].add_grad(dx);
  };
  return Variable(y, {x}, backward);
}

LocalResponseNorm::LocalResponseNorm(LrnParams params) : params_(params) {
  check_params(params_);
}

Variable LocalResponseNorm::forward(const Variable& input) {
  return local_response_norm(input, params_);
}

std::string LocalResponseNorm::describe() const {
  std::ostringstream out;
  out << "LocalResponseNorm(" << params_.size << ", alpha " << params_.alpha << ", beta "
      << params_.beta << ", k " << params_.k << ")";
  return out.str();
}

}  // namespace tunecnn
