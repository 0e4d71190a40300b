#pragma once
// Reading problem keys back (the inverse of ConvProblem::key(), PoolProblem::key() and
// SoftmaxProblem::key()): the words of a key and the "name<number>" fields they set, with errors
// that name the key and what is wrong. The per-kind parsers (parse_conv_key, parse_pool_key,
// parse_softmax_key) say which fields and flags their keys have.
#include <set>
#include <span>
#include <string_view>
#include <vector>

#include "core/types.h"
#include "ops/vocabulary.h"

namespace tunecnn {

// Words separated by spaces or tabs.
std::vector<std::string_view> split_key_words(std::string_view text);

// A size field: its name in the key and where its value goes.
struct KeyField {
  std::string_view name;
  int* value;
};

// Reads `words` (the key's words after its fixed leading ones): each is either a bare flag from
// `flags` or a field "name<digits>" from `fields`. Every field must appear exactly once, a flag
// at most once. Returns the flags seen. Throws Error "bad KIND key 'KEY': ..." otherwise.
std::set<std::string_view> parse_key_fields(std::string_view kind, std::string_view key,
                                            std::span<const std::string_view> words,
                                            std::span<const KeyField> fields,
                                            std::span<const std::string_view> flags);

// "fwd", "bwd_data" or "bwd_weights"; throws Error naming the key otherwise.
Direction parse_key_direction(std::string_view kind, std::string_view key, std::string_view word);

// The dtype the flags give: f64 when "f64" is among them, f32 otherwise; both is an error.
DType key_dtype(std::string_view kind, std::string_view key, const std::set<std::string_view>& flags);

}  // namespace tunecnn
