#pragma once
// A pooling problem as a value, like ConvProblem: fields and a stable one-line key, e.g.
// "pool max fwd mb64 c16 ih28 iw28 kh2 kw2 sh2 sw2 ph0 pw0". Forward and backward (bwd_data)
// are separate problems; pooling has no weights, so bwd_weights is invalid.
#include <cstdint>
#include <string>

#include "core/tensor.h"
#include "ops/vocabulary.h"

namespace tunecnn {

enum class PoolKind : std::uint8_t { max, avg };
std::string_view to_string(PoolKind kind);  // "max", "avg"

struct PoolProblem {
  Direction dir = Direction::fwd;
  PoolKind kind = PoolKind::max;
  int mb = 1, c = 1, ih = 1, iw = 1, kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
  DType dt = DType::f32;
  bool count_include_pad = false;  // average only: divide by kh*kw instead of the real pixels
  // Where it runs. Not in the key: a tuning cache keeps each device's entries apart.
  Device device = Device::cpu;

  // Floor mode: a window that would run past the padded input is dropped.
  int oh() const { return (ih + 2 * ph - kh) / sh + 1; }
  int ow() const { return (iw + 2 * pw - kw) / sw + 1; }
  Shape src_shape() const { return {mb, c, ih, iw}; }
  Shape dst_shape() const { return {mb, c, oh(), ow()}; }
  // Stable: written to tuning caches. " f64" and " incpad" are appended when they apply.
  std::string key() const;
  PoolProblem with_dir(Direction d) const {
    PoolProblem p = *this;
    p.dir = d;
    return p;
  }
  void validate() const;  // throws Error naming the key and the bad field
  bool operator==(const PoolProblem&) const = default;
};

// The inverse of PoolProblem::key(): "pool KIND DIR", the ten size fields (any order, each once),
// and optional "f64" and "incpad" (average only). Throws Error naming the text and what is
// wrong, or when the problem fails validate().
PoolProblem parse_pool_key(std::string_view key);

}  // namespace tunecnn
