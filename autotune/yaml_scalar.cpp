// yaml-cpp converts a scalar through a stringstream (about a microsecond each, and a large cache
// holds tens of thousands): the forms tuning_cache_emit.cpp writes are read with from_chars here,
// which gives the same value for them. For a plain decimal both round correctly (strtod and
// from_chars); leading zeros (octal to yaml-cpp), signs, hex, `.inf`, out-of-range and subnormal
// values all go to yaml-cpp's converter.
#include "autotune/yaml_scalar.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <cstddef>
#include <string>

namespace tunecnn {
namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// `[-]digits`, no leading zero unless the number is 0.
bool is_plain_integer(std::string_view text) {
  if (text.starts_with('-')) text.remove_prefix(1);
  if (text.empty() || (text.front() == '0' && text.size() > 1)) return false;
  for (const char c : text)
    if (!is_digit(c)) return false;
  return true;
}

// `[-]digits[.digits][(e|E)[+|-]digits]`.
bool is_plain_decimal(std::string_view text) {
  std::size_t i = text.starts_with('-') ? 1 : 0;
  const auto digits = [&] {
    const std::size_t start = i;
    while (i < text.size() && is_digit(text[i])) ++i;
    return i > start;
  };
  if (!digits()) return false;
  if (i < text.size() && text[i] == '.' && (++i, !digits())) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == text.size();
}

template <class T>
std::optional<T> from_chars_exactly(std::string_view text) {
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

template <class T>
std::optional<T> yaml_cpp_converted(std::string_view text) {
  T value{};
  if (YAML::convert<T>::decode(YAML::Node(std::string(text)), value)) return value;
  return std::nullopt;
}

template <class T>
std::optional<T> direct(std::string_view text);

template <>
std::optional<int> direct<int>(std::string_view text) {
  return is_plain_integer(text) ? from_chars_exactly<int>(text) : std::nullopt;
}

template <>
std::optional<std::size_t> direct<std::size_t>(std::string_view text) {
  return is_plain_integer(text) && !text.starts_with('-') ? from_chars_exactly<std::size_t>(text) : std::nullopt;
}

template <>
std::optional<double> direct<double>(std::string_view text) {
  if (!is_plain_decimal(text)) return std::nullopt;
  const std::optional<double> value = from_chars_exactly<double>(text);
  if (!value || (std::fpclassify(*value) != FP_NORMAL && *value != 0)) return std::nullopt;
  return value;
}

template <>
std::optional<bool> direct<bool>(std::string_view text) {
  if (text == "true") return true;
  if (text == "false") return false;
  return std::nullopt;
}

}  // namespace

template <class T>
std::optional<T> read_yaml_scalar(std::string_view text) {
  if (const std::optional<T> value = direct<T>(text)) return value;
  return yaml_cpp_converted<T>(text);
}

template std::optional<int> read_yaml_scalar<int>(std::string_view);
template std::optional<std::size_t> read_yaml_scalar<std::size_t>(std::string_view);
template std::optional<double> read_yaml_scalar<double>(std::string_view);
template std::optional<bool> read_yaml_scalar<bool>(std::string_view);

}  // namespace tunecnn
