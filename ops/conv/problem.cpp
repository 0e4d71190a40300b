#include "ops/conv/problem.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>
#include <vector>

namespace tunecnn {

std::string_view to_string(Direction dir) {
  switch (dir) {
    case Direction::fwd: return "fwd";
    case Direction::bwd_data: return "bwd_data";
    case Direction::bwd_weights: return "bwd_weights";
  }
  return "?";
}

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

namespace {

std::vector<std::string_view> split_words(std::string_view text) {
  std::vector<std::string_view> words;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t start = text.find_first_not_of(" \t", pos);
    if (start == std::string_view::npos) break;
    const std::size_t end = std::min(text.find_first_of(" \t", start), text.size());
    words.push_back(text.substr(start, end - start));
    pos = end;
  }
  return words;
}

Direction parse_direction(std::string_view word, std::string_view key) {
  for (Direction dir : {Direction::fwd, Direction::bwd_data, Direction::bwd_weights})
    if (word == to_string(dir)) return dir;
  TUNECNN_FAIL("bad conv key '", key, "': unknown direction '", word,
               "' (expected fwd, bwd_data or bwd_weights)");
}

// The size fields in key() order, with where each lives in a ConvProblem.
struct KeyField {
  std::string_view name;
  int ConvProblem::*member;
};
constexpr KeyField kKeyFields[] = {
    {"mb", &ConvProblem::mb}, {"ic", &ConvProblem::ic}, {"ih", &ConvProblem::ih},
    {"iw", &ConvProblem::iw}, {"oc", &ConvProblem::oc}, {"kh", &ConvProblem::kh},
    {"kw", &ConvProblem::kw}, {"sh", &ConvProblem::sh}, {"sw", &ConvProblem::sw},
    {"ph", &ConvProblem::ph}, {"pw", &ConvProblem::pw}, {"g", &ConvProblem::g}};

// The field a word like "ih112" sets, by its leading letters; nullptr for an unknown name.
const KeyField* field_of(std::string_view word) {
  const std::size_t letters =
      std::min(word.find_first_not_of("abcdefghijklmnopqrstuvwxyz"), word.size());
  for (const KeyField& field : kKeyFields)
    if (word.substr(0, letters) == field.name) return &field;
  return nullptr;
}

int parse_field_value(std::string_view digits, std::string_view word, std::string_view key) {
  int value = 0;
  // from_chars takes a leading '-'; sizes in a key never have a sign.
  const bool unsigned_digits =
      !digits.empty() && std::isdigit(static_cast<unsigned char>(digits[0]));
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  TUNECNN_CHECK(unsigned_digits && error == std::errc() && end == digits.data() + digits.size(),
                "bad conv key '", key, "': '", word,
                "' needs a non-negative whole number that fits in an int after its name");
  return value;
}

}  // namespace

ConvProblem parse_conv_key(std::string_view key) {
  const std::vector<std::string_view> words = split_words(key);
  TUNECNN_CHECK(words.size() >= 2 && words[0] == "conv", "bad conv key '", key,
                "': it must start with 'conv DIR', e.g. '", ConvProblem{}.key(), "'");
  ConvProblem problem;
  problem.dir = parse_direction(words[1], key);
  std::set<std::string_view> seen;
  for (std::size_t i = 2; i < words.size(); ++i) {
    const std::string_view word = words[i];
    if (word == "f64" || word == "f32") {
      TUNECNN_CHECK(seen.insert("dtype").second, "bad conv key '", key, "': two dtypes");
      problem.dt = word == "f64" ? DType::f64 : DType::f32;
      continue;
    }
    const KeyField* field = field_of(word);
    TUNECNN_CHECK(field != nullptr, "bad conv key '", key, "': unknown field '", word,
                  "' (expected mb ic ih iw oc kh kw sh sw ph pw g followed by a number, or f64)");
    TUNECNN_CHECK(seen.insert(field->name).second, "bad conv key '", key, "': field '", field->name,
                  "' appears twice");
    problem.*(field->member) = parse_field_value(word.substr(field->name.size()), word, key);
  }
  for (const KeyField& field : kKeyFields)
    TUNECNN_CHECK(seen.count(field.name) == 1, "bad conv key '", key, "': field '", field.name,
                  "' is missing");
  try {
    problem.validate();
  } catch (const Error& e) {
    TUNECNN_FAIL("bad conv key '", key, "': ", e.message());
  }
  return problem;
}

}  // namespace tunecnn
