#include "ops/conv/problem.h"

#include <span>
#include <vector>

#include "ops/problem_key.h"

namespace tunecnn {

std::int64_t ConvProblem::macs() const {
  return static_cast<std::int64_t>(mb) * oc * oh() * ow() * (ic / g) * kh * kw;
}

std::string ConvProblem::key() const {
  std::string k = "conv " + std::string(to_string(dir));
  auto field = [&](const char* name, int value) { k += " " + std::string(name) + std::to_string(value); };
  field("mb", mb), field("ic", ic), field("ih", ih), field("iw", iw), field("oc", oc);
  field("kh", kh), field("kw", kw), field("sh", sh), field("sw", sw), field("ph", ph);
  field("pw", pw), field("g", g);
  if (dt != DType::f32) k += " " + std::string(to_string(dt));
  return k;
}

void ConvProblem::validate() const {
  TUNECNN_CHECK(mb > 0 && ic > 0 && ih > 0 && iw > 0 && oc > 0 && kh > 0 && kw > 0,
                "conv problem has a non-positive size: ", key());
  TUNECNN_CHECK(sh > 0 && sw > 0 && ph >= 0 && pw >= 0, "conv problem has a bad stride or padding: ", key());
  TUNECNN_CHECK(g > 0 && ic % g == 0 && oc % g == 0, "conv groups must divide ic and oc: ", key());
  TUNECNN_CHECK(ih + 2 * ph >= kh && iw + 2 * pw >= kw, "conv kernel larger than the padded input: ", key());
}

ConvProblem parse_conv_key(std::string_view key) {
  const std::vector<std::string_view> words = split_key_words(key);
  TUNECNN_CHECK(words.size() >= 2 && words[0] == "conv", "bad conv key '", key,
                "': it must start with 'conv DIR', e.g. '", ConvProblem{}.key(), "'");
  ConvProblem p;
  p.dir = parse_key_direction("conv", key, words[1]);
  const KeyField fields[] = {{"mb", &p.mb}, {"ic", &p.ic}, {"ih", &p.ih}, {"iw", &p.iw},
                             {"oc", &p.oc}, {"kh", &p.kh}, {"kw", &p.kw}, {"sh", &p.sh},
                             {"sw", &p.sw}, {"ph", &p.ph}, {"pw", &p.pw}, {"g", &p.g}};
  const std::string_view flags[] = {"f32", "f64"};
  p.dt = key_dtype("conv", key,
                   parse_key_fields("conv", key, std::span(words).subspan(2), fields, flags));
  try {
    p.validate();
  } catch (const Error& e) {
    TUNECNN_FAIL("bad conv key '", key, "': ", e.message());
  }
  return p;
}

}  // namespace tunecnn
