#include "ops/pool/problem.h"

#include <span>
#include <vector>

#include "ops/problem_key.h"

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

PoolProblem parse_pool_key(std::string_view key) {
  const std::vector<std::string_view> words = split_key_words(key);
  TUNECNN_CHECK(words.size() >= 3 && words[0] == "pool" && (words[1] == "max" || words[1] == "avg"),
                "bad pool key '", key, "': it must start with 'pool max|avg DIR', e.g. '",
                PoolProblem{}.key(), "'");
  PoolProblem p;
  p.kind = words[1] == "max" ? PoolKind::max : PoolKind::avg;
  p.dir = parse_key_direction("pool", key, words[2]);
  const KeyField fields[] = {{"mb", &p.mb}, {"c", &p.c},   {"ih", &p.ih}, {"iw", &p.iw},
                             {"kh", &p.kh}, {"kw", &p.kw}, {"sh", &p.sh}, {"sw", &p.sw},
                             {"ph", &p.ph}, {"pw", &p.pw}};
  const std::string_view flags[] = {"f32", "f64", "incpad"};
  const std::set<std::string_view> seen =
      parse_key_fields("pool", key, std::span(words).subspan(3), fields, flags);
  p.dt = key_dtype("pool", key, seen);
  p.count_include_pad = seen.count("incpad") > 0;
  TUNECNN_CHECK(!p.count_include_pad || p.kind == PoolKind::avg, "bad pool key '", key,
                "': incpad applies to average pooling only");
  try {
    p.validate();
  } catch (const Error& e) {
    TUNECNN_FAIL("bad pool key '", key, "': ", e.message());
  }
  return p;
}

}  // namespace tunecnn
