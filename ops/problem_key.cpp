#include "ops/problem_key.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>

#include "core/error.h"

namespace tunecnn {
namespace {

// The field a word like "ih112" sets, by its leading letters; nullptr for an unknown name.
const KeyField* field_of(std::string_view word, std::span<const KeyField> fields) {
  const std::size_t letters = std::min(word.find_first_not_of("abcdefghijklmnopqrstuvwxyz"), word.size());
  for (const KeyField& field : fields)
    if (word.substr(0, letters) == field.name) return &field;
  return nullptr;
}

int parse_field_value(std::string_view kind, std::string_view key, std::string_view word,
                      std::string_view digits) {
  int value = 0;
  // from_chars takes a leading '-'; sizes in a key never have a sign.
  const bool unsigned_digits = !digits.empty() && std::isdigit(static_cast<unsigned char>(digits[0]));
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  TUNECNN_CHECK(unsigned_digits && error == std::errc() && end == digits.data() + digits.size(), "bad ",
                kind, " key '", key, "': '", word,
                "' needs a non-negative whole number that fits in an int after its name");
  return value;
}

std::string expected_words(std::span<const KeyField> fields, std::span<const std::string_view> flags) {
  std::string text;
  for (const KeyField& field : fields) text += (text.empty() ? "" : " ") + std::string(field.name);
  text += " followed by a number";
  if (!flags.empty()) {
    text += ", or";
    for (std::string_view flag : flags) text += " " + std::string(flag);
  }
  return text;
}

}  // namespace

std::vector<std::string_view> split_key_words(std::string_view text) {
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

std::set<std::string_view> parse_key_fields(std::string_view kind, std::string_view key,
                                            std::span<const std::string_view> words,
                                            std::span<const KeyField> fields,
                                            std::span<const std::string_view> flags) {
  std::set<std::string_view> seen, seen_flags;
  for (std::string_view word : words) {
    if (std::find(flags.begin(), flags.end(), word) != flags.end()) {
      TUNECNN_CHECK(seen_flags.insert(word).second, "bad ", kind, " key '", key, "': '", word,
                    "' appears twice");
      continue;
    }
    const KeyField* field = field_of(word, fields);
    TUNECNN_CHECK(field != nullptr, "bad ", kind, " key '", key, "': unknown field '", word,
                  "' (expected ", expected_words(fields, flags), ")");
    TUNECNN_CHECK(seen.insert(field->name).second, "bad ", kind, " key '", key, "': field '",
                  field->name, "' appears twice");
    *field->value = parse_field_value(kind, key, word, word.substr(field->name.size()));
  }
  for (const KeyField& field : fields)
    TUNECNN_CHECK(seen.count(field.name) == 1, "bad ", kind, " key '", key, "': field '", field.name,
                  "' is missing");
  return seen_flags;
}

Direction parse_key_direction(std::string_view kind, std::string_view key, std::string_view word) {
  for (Direction dir : {Direction::fwd, Direction::bwd_data, Direction::bwd_weights})
    if (word == to_string(dir)) return dir;
  TUNECNN_FAIL("bad ", kind, " key '", key, "': unknown direction '", word,
               "' (expected fwd, bwd_data or bwd_weights)");
}

DType key_dtype(std::string_view kind, std::string_view key, const std::set<std::string_view>& flags) {
  TUNECNN_CHECK(!(flags.count("f64") && flags.count("f32")), "bad ", kind, " key '", key, "': two dtypes");
  return flags.count("f64") ? DType::f64 : DType::f32;
}

}  // namespace tunecnn
