#pragma once
// A convolution problem as a value: benchdnn-style fields and a stable one-line key, e.g.
// "conv fwd mb64 ic32 ih112 iw112 oc32 kh3 kw3 sh1 sw1 ph1 pw1 g32". Forward, backward-data and
// backward-weights are separate problems. Bias is not part of it: the conv op adds the bias and
// reduces its gradient (ops/conv/bias.h), so every solver stays a pure convolution.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/tensor.h"
#include "ops/vocabulary.h"

namespace tunecnn {

struct ConvProblem {
  Direction dir = Direction::fwd;
  int mb = 1, ic = 1, ih = 1, iw = 1, oc = 1, kh = 1, kw = 1;
  int sh = 1, sw = 1, ph = 0, pw = 0, g = 1;
  DType dt = DType::f32;
  // Where it runs. Not in the key: a tuning cache keeps each device's entries apart.
  Device device = Device::cpu;

  int oh() const { return (ih + 2 * ph - kh) / sh + 1; }
  int ow() const { return (iw + 2 * pw - kw) / sw + 1; }
  Shape src_shape() const { return {mb, ic, ih, iw}; }
  Shape wei_shape() const { return {oc, ic / g, kh, kw}; }
  Shape dst_shape() const { return {mb, oc, oh(), ow()}; }
  std::int64_t macs() const;  // multiply-adds, the same in every direction
  std::string key() const;    // stable: written to tuning caches; " f64" is appended for doubles
  ConvProblem with_dir(Direction d) const {
    ConvProblem p = *this;
    p.dir = d;
    return p;
  }
  void validate() const;  // throws Error naming the key and the bad field
  bool operator==(const ConvProblem&) const = default;
};

// The inverse of ConvProblem::key(): "conv DIR" then the twelve size fields (any order, each
// once) and an optional dtype ("f64"; "f32" is the default). Throws Error naming the text and
// what is wrong, or when the problem fails validate().
ConvProblem parse_conv_key(std::string_view key);

}  // namespace tunecnn
