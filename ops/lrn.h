#pragma once
// Local response normalisation across channels (Krizhevsky et al. 2012, section 3.3), in any of
// the three memory orders:
//
//   b_c = a_c / (k + alpha / n * sum_{c' in window(c)} a_c'^2) ^ beta
//
// with the window of n channels around c clipped at the edges (channels outside count as zero).
// The paper writes alpha without the /n; we divide by n as PyTorch's nn.LocalResponseNorm and
// Caffe's LRN layer do, so that alpha = 1e-4 means the same net here, in Caffe's bvlc_alexnet and
// in apps/bench/train_vs_pytorch.py's PyTorch side.
//
// The window of channel c is [c - n/2, c + (n-1)/2] (integer division): centred for odd n, and
// for even n one channel more below than above, which is where PyTorch puts it (it pads n/2
// channels in front and (n-1)/2 behind). Caffe rejects even n; we follow PyTorch instead.
#include <string>
#include <vector>

#include "core/module.h"

namespace tunecnn {

// Defaults are AlexNet's.
struct LrnParams {
  int size = 5;  // n, channels in the window
  double alpha = 1e-4;
  double beta = 0.75;
  double k = 2.0;
};

// The output has the input's shape, dtype and layout. Training and evaluation are the same: the
// op has no state. When the graph is recorded, forward keeps the denominator's base
// s = k + alpha/n * sum a^2 (one tensor of the input's size) for backward, as Caffe does; the
// power is recomputed there. Under recompute_activations() (core/variable.h), s is not kept:
// backward sums it again from the input, to the same bits. Results do not depend on the thread count, and every layout sums
// in the same order, so the three agree to rounding. Throws Error for a non-4-D input or size < 1, alpha < 0, k <= 0 (the
// base must stay positive) or a beta that is not finite.
Variable local_response_norm(const Variable& x, const LrnParams& params = {});

namespace cuda {  // the GPU versions (ops/lrn.cu); callers use local_response_norm()
// y = x * s^-beta, with s written to `base` when it is defined.
void lrn_forward(const Tensor& x, Tensor& y, Tensor& base, const LrnParams& params);
void lrn_backward(const Tensor& x, const Tensor& y, const Tensor& base, const Tensor& dy,
                  Tensor& dx, const LrnParams& params);
}  // namespace cuda

class LocalResponseNorm : public Module {
 public:
  explicit LocalResponseNorm(LrnParams params = {});
  Variable forward(const Variable& input) override;
  // Reads each layout's channel runs in place: any memory order, kept.
  std::vector<Layout> input_layouts(const Shape&) const override {
    return {Layout::NCHW, Layout::CHWN, Layout::NHWC};
  }
  std::string describe() const override;  // "LocalResponseNorm(5, alpha 0.0001, beta 0.75, k 2)"
  const LrnParams& params() const { return params_; }

 private:
  LrnParams params_;
};

}  // namespace tunecnn
