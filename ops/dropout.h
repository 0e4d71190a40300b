#pragma once
// Inverted dropout: in training each element is zeroed with probability p and the kept ones are
// scaled by 1/(1-p), so evaluation is the identity and needs no rescaling.
#include <memory>

#include "core/module.h"
#include "core/rng.h"

namespace tunecnn {

// Fills `mask` (a CPU tensor) with 0 (dropped) or 1/(1-p) (kept), drawing from `rng` in element
// order.
void dropout_mask(Tensor& mask, double p, Rng& rng);
void dropout_apply(const Tensor& x, const Tensor& mask, Tensor& y);  // y = x * mask

// Identity (the same Variable) when !training or p == 0. Requires 0 <= p < 1. On the GPU the mask
// is drawn on the host from the same RNG and uploaded, so a GPU step drops exactly what the CPU
// step would from the same RNG state.
Variable dropout(const Variable& x, double p, bool training, Rng& rng);

namespace cuda {  // the GPU version (ops/dropout.cu); callers use dropout_apply
void dropout_apply(const Tensor& x, const Tensor& mask, Tensor& y);
}  // namespace cuda

class Dropout : public Module {
 public:
  // The RNG is shared with the trainer so that its state goes into checkpoints.
  Dropout(double p, std::shared_ptr<Rng> rng);
  Variable forward(const Variable& input) override;
  std::string describe() const override;
  double p() const { return p_; }

 private:
  double p_;
  std::shared_ptr<Rng> rng_;
};

}  // namespace tunecnn
