#include "ops/pool/problem.h"

namespace tunecnn {

std::string_view to_string(PoolKind kind) {
  return kind == PoolKind::max ? "max" : "avg";
}

std::string PoolProblem::key() const {
  std::string k = "pool " + std::string(to_string(kind)) + " " + std::string(to_string(dir));
  auto field = [&](const char* name, int value) {
    k += " " + std::string(name) + std::to_string(value);
  };
  field("mb", mb), field("c", c), field("ih", ih), field("iw", iw), field("kh", kh);
  field("kw", kw), field("sh", sh), field("sw", sw), field("ph", ph), field("pw", pw);
  if (dt != DType::f32) k += " " + std::string(to_string(dt));
  if (kind == PoolKind::avg && count_include_pad) k += " incpad";
  return k;
}

void PoolProblem::validate() const {
  TUNECNN_CHECK(dir != Direction::bwd_weights, "pooling has no weights: ", key());
  TUNECNN_CHECK(mb > 0 && c > 0 && ih > 0 && iw > 0 && kh > 0 && kw > 0,
                "pool problem has a non-positive size: ", key());
  TUNECNN_CHECK(sh > 0 && sw > 0 && ph >= 0 && pw >= 0,
                "pool problem has a bad stride or padding: ", key());
  TUNECNN_CHECK(ih + 2 * ph >= kh && iw + 2 * pw >= kw,
                "pool window larger than the padded input: ", key());
  // With padding below the window size every window holds at least one real pixel, so a max is
  // always defined and an average never divides by zero.
  TUNECNN_CHECK(ph < kh && pw < kw, "pool padding must be smaller than the window: ", key());
}

}  // namespace tunecnn
