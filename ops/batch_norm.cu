// BatchNorm2d on the GPU with simple kernels of its own rather than cuDNN's: they read the same
// [outer, C, inner] view of ops/channel_view.h, so every layout runs as it is (cuDNN's batch norm
// takes NCHW or NHWC only), and they keep the CPU op's conventions by construction (momentum as
// PyTorch's, the unbiased variance in the running statistics, statistics in double).
// Statistics: one block per channel, two passes over the channel (the mean, then the sum of
// squared deviations from it), each reduced in double by a fixed tree, so results are the same
// every run. The normalisation and the input gradient are elementwise kernels in double. Saved
// for backward: the per-channel mean and 1/std, in double, on the GPU.
// A ReLU after it (batch_norm_relu) runs over the output in place; its backward mask comes from
// the output normalised again from the input, so backward never reads the output. Under
// recompute_activations() the output is marked recomputable, normalised again (and clipped) from
// the input with the forward's statistics and a copy of its gamma and beta.
#include <cmath>

#include "core/cuda_elementwise.cuh"
#include "ops/batch_norm.h"
#include "core/variable.h"
#include "ops/channel_view.h"
#include "ops/cuda_reduce.cuh"
#include "ops/relu.h"

namespace tunecnn::cuda {
namespace {

// Where value k of channel c sits: the k-th of its outer * inner values in memory order.
struct View {
  std::int64_t outer, channels, inner;
  __host__ __device__ std::int64_t count() const { return outer * inner; }
  __device__ std::int64_t at(std::int64_t c, std::int64_t k) const {
    return ((k / inner) * channels + c) * inner + k % inner;
  }
  __device__ std::int64_t channel_of(std::int64_t i) const { return (i / inner) % channels; }
};

View view_of(const Tensor& x) {
  const ChannelView v = channel_view(x, "batch_norm");
  return {v.outer, v.channels, v.inner};
}

// The per-channel statistics the forward pass normalises with and backward reuses.
struct Saved {
  Tensor mean, invstd;  // [C], f64, on the GPU
};

Saved make_saved(std::int64_t channels) {
  return {Tensor::empty({channels}, DType::f64, Device::cuda),
          Tensor::empty({channels}, DType::f64, Device::cuda)};
}

template <class T>
const T* ptr(const Tensor& t) {
  return static_cast<const T*>(t.raw_data());
}

template <class T>
T* mut_ptr(const Tensor& t) {  // Tensor handles share storage; the bytes are mutable
  return static_cast<T*>(t.raw_data());
}

// Training: batch mean and 1/std per channel, and the running statistics updated in place.
template <class T>
__global__ void batch_statistics(const T* x, View v, double momentum, double eps,
                                 T* running_mean, T* running_var, double* mean, double* invstd) {
  const std::int64_t n = v.count();
  for (std::int64_t c = blockIdx.x; c < v.channels; c += gridDim.x) {
    double local = 0;
    for (std::int64_t k = threadIdx.x; k < n; k += kReduceThreads)
      local += static_cast<double>(x[v.at(c, k)]);
    const double m = block_reduce(local, SumOp()) / static_cast<double>(n);
    local = 0;
    for (std::int64_t k = threadIdx.x; k < n; k += kReduceThreads) {
      const double d = static_cast<double>(x[v.at(c, k)]) - m;
      local += d * d;
    }
    const double m2 = block_reduce(local, SumOp());
    if (threadIdx.x != 0) continue;
    mean[c] = m;
    invstd[c] = 1.0 / sqrt(m2 / static_cast<double>(n) + eps);
    running_mean[c] =
        static_cast<T>((1 - momentum) * static_cast<double>(running_mean[c]) + momentum * m);
    running_var[c] = static_cast<T>((1 - momentum) * static_cast<double>(running_var[c]) +
                                    momentum * m2 / static_cast<double>(n - 1));
  }
}

// Per channel: sum dy and sum dy * (x - mean); the parameter gradients when asked for.
template <class T>
__global__ void gradient_sums(const T* dy, const T* x, View v, const double* mean,
                              const double* invstd, double* sums, T* dgamma, T* dbeta) {
  const std::int64_t n = v.count();
  for (std::int64_t c = blockIdx.x; c < v.channels; c += gridDim.x) {
    double local_dy = 0, local_dy_xc = 0;
    for (std::int64_t k = threadIdx.x; k < n; k += kReduceThreads) {
      const std::int64_t i = v.at(c, k);
      const double g = static_cast<double>(dy[i]);
      local_dy += g;
      local_dy_xc += g * (static_cast<double>(x[i]) - mean[c]);
    }
    const double sum_dy = block_reduce(local_dy, SumOp());
    const double sum_dy_xc = block_reduce(local_dy_xc, SumOp());
    if (threadIdx.x != 0) continue;
    sums[2 * c] = sum_dy;
    sums[2 * c + 1] = sum_dy_xc;
    if (dgamma != nullptr) dgamma[c] = static_cast<T>(sum_dy_xc * invstd[c]);
    if (dbeta != nullptr) dbeta[c] = static_cast<T>(sum_dy);
  }
}

template <class T>
void launch_per_channel_statistics(const Tensor& x, const View& v, const BatchNormOptions& o,
                                   Tensor& running_mean, Tensor& running_var, Saved& s) {
  const int blocks = static_cast<int>(v.channels < 65535 ? v.channels : 65535);
  batch_statistics<T><<<blocks, kReduceThreads, 0, cuda_stream()>>>(
      ptr<T>(x), v, o.momentum, o.eps, mut_ptr<T>(running_mean), mut_ptr<T>(running_var),
      mut_ptr<double>(s.mean), mut_ptr<double>(s.invstd));
  TUNECNN_CUDA_CHECK_LAUNCH();
}

// Evaluation: the running statistics are the ones to normalise with.
template <class T>
void running_statistics(const Tensor& running_mean, const Tensor& running_var, double eps,
                        Saved& s) {
  const T* rm = ptr<T>(running_mean);
  const T* rv = ptr<T>(running_var);
  double* mean = mut_ptr<double>(s.mean);
  double* invstd = mut_ptr<double>(s.invstd);
  launch_elementwise(running_mean.numel(), [=] __device__(std::int64_t c) {
    mean[c] = static_cast<double>(rm[c]);
    invstd[c] = 1.0 / sqrt(static_cast<double>(rv[c]) + eps);
  });
}

// y = (x - mean) * gamma / std + beta.
template <class T>
void normalise(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Saved& s,
               const View& v, Tensor& y) {
  const T* in = ptr<T>(x);
  const T* g = ptr<T>(gamma);
  const T* b = ptr<T>(beta);
  const double* mean = ptr<double>(s.mean);
  const double* invstd = ptr<double>(s.invstd);
  T* out = mut_ptr<T>(y);
  launch_elementwise(x.numel(), [=] __device__(std::int64_t i) {
    const std::int64_t c = v.channel_of(i);
    out[i] = static_cast<T>((static_cast<double>(in[i]) - mean[c]) * invstd[c] *
                                static_cast<double>(g[c]) +
                            static_cast<double>(b[c]));
  });
}

// Training: dx = a/M * (M dy - sum dy - xhat sum(dy xhat)) = a dy + p (x - mean) + q, with
// a = gamma / std. Evaluation (statistics are constants): dx = a dy.
template <class T>
void input_gradient(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Saved& s,
                    const Tensor& sums, bool training, const View& v, Tensor& dx) {
  const T* g = ptr<T>(dy);
  const T* in = ptr<T>(x);
  const T* w = ptr<T>(gamma);
  const double* mean = ptr<double>(s.mean);
  const double* invstd = ptr<double>(s.invstd);
  const double* sum = training ? ptr<double>(sums) : nullptr;
  const double count = static_cast<double>(v.count());
  T* out = mut_ptr<T>(dx);
  launch_elementwise(dx.numel(), [=] __device__(std::int64_t i) {
    const std::int64_t c = v.channel_of(i);
    const double a = static_cast<double>(w[c]) * invstd[c];
    double result = static_cast<double>(g[i]) * a;
    if (sum != nullptr) {
      const double p = -a * invstd[c] * invstd[c] * sum[2 * c + 1] / count;
      const double q = -a * sum[2 * c] / count;
      result += (static_cast<double>(in[i]) - mean[c]) * p + q;
    }
    out[i] = static_cast<T>(result);
  });
}

template <class T>
void backward_as(std::vector<Variable>& in, const Tensor& dy, const Saved& s, bool training) {
  const Tensor& x = in[0].data();
  TUNECNN_CHECK(dy.layout() == x.layout() && dy.numel() == x.numel() && dy.dtype() == x.dtype() &&
                    dy.device() == x.device(),
                "batch_norm backward: ", dy.describe(), " does not match input ", x.describe());
  const View v = view_of(x);
  const bool need_x = in[0].requires_grad();
  const bool need_params = in[1].requires_grad() || in[2].requires_grad();
  Tensor sums, dgamma, dbeta;
  if (training || need_params) {
    sums = Tensor::empty({2 * v.channels}, DType::f64, Device::cuda);
    if (need_params) {
      dgamma = Tensor::empty({v.channels}, x.dtype(), Device::cuda);
      dbeta = Tensor::empty({v.channels}, x.dtype(), Device::cuda);
    }
    const int blocks = static_cast<int>(v.channels < 65535 ? v.channels : 65535);
    gradient_sums<T><<<blocks, kReduceThreads, 0, cuda_stream()>>>(
        ptr<T>(dy), ptr<T>(x), v, ptr<double>(s.mean), ptr<double>(s.invstd),
        mut_ptr<double>(sums), need_params ? mut_ptr<T>(dgamma) : nullptr,
        need_params ? mut_ptr<T>(dbeta) : nullptr);
    TUNECNN_CUDA_CHECK_LAUNCH();
  }
  if (need_params) {
    in[1].add_grad(dgamma);
    in[2].add_grad(dbeta);
  }
  if (!need_x) return;
  Tensor dx = Tensor::empty_like(x);
  input_gradient<T>(dy, x, in[1].data(), s, sums, training, v, dx);
  in[0].add_grad(dx);
}

// The output again from the input: normalised with the forward's statistics, gamma and beta,
// then clipped when a ReLU follows.
template <class T>
Tensor output_from(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Saved& s,
                   std::optional<double> relu_cap) {
  Tensor y = Tensor::empty_like(x);
  normalise<T>(x, gamma, beta, s, view_of(x), y);
  if (relu_cap) cuda::relu_forward(y, y, *relu_cap);
  return y;
}

// dy through the ReLU: zero where the output was clipped, the output made again element by
// element as normalise() made it (one pass: x and dy read, the result written).
template <class T>
Tensor through_relu(const Tensor& x, const Tensor& dy, const Tensor& gamma, const Tensor& beta, const Saved& s,
                    double cap) {
  const View v = view_of(x);
  const T* in = ptr<T>(x);
  const T* grad = ptr<T>(dy);
  const T* g = ptr<T>(gamma);
  const T* b = ptr<T>(beta);
  const double* mean = ptr<double>(s.mean);
  const double* invstd = ptr<double>(s.invstd);
  Tensor masked = Tensor::empty_like(dy);
  T* out = mut_ptr<T>(masked);
  const bool capped = cap != kNoCap;
  const T top = static_cast<T>(cap);
  launch_elementwise(x.numel(), [=] __device__(std::int64_t i) {
    const std::int64_t c = v.channel_of(i);
    const T y = static_cast<T>((static_cast<double>(in[i]) - mean[c]) * invstd[c] * static_cast<double>(g[c]) +
                               static_cast<double>(b[c]));
    out[i] = (y > T(0) && (!capped || y < top)) ? grad[i] : T(0);
  });
  return masked;
}

template <class T>
Tensor forward_as(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& running_mean,
                  Tensor& running_var, bool training, const BatchNormOptions& options, Saved& s) {
  const View v = view_of(x);
  if (training)
    launch_per_channel_statistics<T>(x, v, options, running_mean, running_var, s);
  else
    running_statistics<T>(running_mean, running_var, options.eps, s);
  Tensor y = Tensor::empty_like(x);
  normalise<T>(x, gamma, beta, s, v, y);
  return y;
}

}  // namespace

Variable batch_norm(const Variable& x, const Variable& gamma, const Variable& beta,
                    Tensor& running_mean, Tensor& running_var, bool training,
                    const BatchNormOptions& options, std::optional<double> relu_cap) {
  const Tensor& input = x.data();
  Saved saved = make_saved(input.dim(1));
  const bool f64 = input.dtype() == DType::f64;
  Tensor y = f64 ? forward_as<double>(input, gamma.data(), beta.data(), running_mean, running_var,
                                      training, options, saved)
                 : forward_as<float>(input, gamma.data(), beta.data(), running_mean, running_var,
                                     training, options, saved);
  if (relu_cap) cuda::relu_forward(y, y, *relu_cap);
  const bool recomputable = recompute_activations();
  // The forward's gamma and beta, for the mask and the recompute, whatever the parameters hold
  // by then (as the CPU's op keeps its per-channel affine).
  Tensor gamma_then, beta_then;
  if (relu_cap || recomputable) gamma_then = gamma.data().clone(), beta_then = beta.data().clone();
  auto backward = [saved, training, f64, relu_cap, gamma_then, beta_then](std::vector<Variable>& in,
                                                                          const Tensor& dy) {
    const Tensor& x = in[0].data();
    Tensor through = dy;  // dy through the ReLU, when there is one
    if (relu_cap)
      through = f64 ? through_relu<double>(x, dy, gamma_then, beta_then, saved, *relu_cap)
                    : through_relu<float>(x, dy, gamma_then, beta_then, saved, *relu_cap);
    if (f64) return backward_as<double>(in, through, saved, training);
    backward_as<float>(in, through, saved, training);
  };
  Variable out(std::move(y), {x, gamma, beta}, backward);
  if (recomputable && out.requires_grad())
    // From the Variable: a recomputable input (a depthwise conv's output) is rebuilt first.
    out.set_recompute([x, gamma_then, beta_then, saved, relu_cap, f64] {
      return f64 ? output_from<double>(x.data(), gamma_then, beta_then, saved, relu_cap)
                 : output_from<float>(x.data(), gamma_then, beta_then, saved, relu_cap);
    });
  return out;
}

}  // namespace tunecnn::cuda
