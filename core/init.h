#pragma once
// Weight initialisation. fan_in/fan_out are passed explicitly: for a conv weight
// [oc, ic/g, kh, kw] fan_in = ic/g*kh*kw and fan_out = oc*kh*kw.
#include "core/rng.h"
#include "core/tensor.h"

namespace tunecnn {

// He et al.: variance 2/fan_in keeps ReLU activations' scale from layer to layer.
void kaiming_normal(Tensor& weight, std::int64_t fan_in, Rng& rng);
void kaiming_uniform(Tensor& weight, std::int64_t fan_in, Rng& rng);
// Glorot and Bengio: variance 2/(fan_in + fan_out), for layers without ReLU.
void xavier_uniform(Tensor& weight, std::int64_t fan_in, std::int64_t fan_out, Rng& rng);
void uniform_fill(Tensor& tensor, double low, double high, Rng& rng);
// Values spread evenly over [low, high), each a hash of its index and `seed`: no generator state
// to step, so it is an order of magnitude faster than uniform_fill. For tensors whose values need
// only be ordinary numbers (no zeros runs, NaNs or denormals), such as the tuner's timing
// arguments, which are as large as a training batch. CPU tensors.
void hash_fill(Tensor& tensor, double low, double high, std::uint64_t seed);

// While one is alive on this thread, the random initialisers above (all but hash_fill) write
// zeros and draw nothing: for a network built only to take a checkpoint's weights
// (apps/training/trained_checkpoint.h), whose random weights were drawn and then overwritten,
// about 9 ms of predict's time for LeNet's 0.4M normals.
class NoWeightInitGuard {
 public:
  NoWeightInitGuard();
  ~NoWeightInitGuard();
  NoWeightInitGuard(const NoWeightInitGuard&) = delete;
  NoWeightInitGuard& operator=(const NoWeightInitGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace tunecnn
