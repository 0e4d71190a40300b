// SGD's update on the GPU: the CPU loop of core/sgd.cpp as one elementwise kernel, the same
// arithmetic in the same order per element, so a GPU step equals the CPU step up to rounding.
#include "core/cuda_elementwise.cuh"
#include "core/sgd.h"

namespace tunecnn::cuda {
namespace {

// The update of grad.numel() elements of param from `offset` on (0 and all of them: the whole).
template <class T>
void update_as(Tensor& param, std::int64_t offset, const Tensor& grad, Tensor& velocity, const SgdOptions& o,
               bool first_step) {
  T* p = static_cast<T*>(param.raw_data()) + offset;
  const T* g = static_cast<const T*>(grad.raw_data());
  T* v = velocity.defined() ? static_cast<T*>(velocity.raw_data()) + offset : nullptr;
  const T lr = static_cast<T>(o.lr), mu = static_cast<T>(o.momentum),
          wd = static_cast<T>(o.weight_decay);
  const bool nesterov = o.nesterov;
  launch_elementwise(grad.numel(), [=] __device__(std::int64_t i) {
    T d = g[i] + wd * p[i];
    if (v != nullptr) {
      v[i] = first_step ? d : mu * v[i] + d;
      d = nesterov ? d + mu * v[i] : v[i];
    }
    p[i] -= lr * d;
  });
}

}  // namespace

void sgd_update(Tensor& param, const Tensor& grad, Tensor& velocity, const SgdOptions& options,
                bool first_step) {
  sgd_update_range(param, 0, grad, velocity, options, first_step);
}

void sgd_update_range(Tensor& param, std::int64_t offset, const Tensor& grad, Tensor& velocity,
                      const SgdOptions& options, bool first_step) {
  if (param.dtype() == DType::f64) return update_as<double>(param, offset, grad, velocity, options, first_step);
  update_as<float>(param, offset, grad, velocity, options, first_step);
}

}  // namespace tunecnn::cuda
