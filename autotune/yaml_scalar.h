#pragma once
// A YAML scalar's text as a number or a bool, with yaml-cpp's meaning (its `as<T>()`): the forms
// the tuning cache writes are converted directly (a plain decimal, `true`, `false`), every other
// text by yaml-cpp's own converter (hex and octal integers, `yes`, `.inf`...). Internal to
// autotune/.
#include <optional>
#include <string_view>

namespace tunecnn {

// nullopt where yaml-cpp's as<T>() would throw. T: int, std::size_t, double or bool.
template <class T>
std::optional<T> read_yaml_scalar(std::string_view text);

}  // namespace tunecnn
