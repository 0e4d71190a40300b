#pragma once
// A YAML document as the tuning cache's reader sees it: nulls, scalars (their text), maps (their
// pairs in file order, a repeated key kept, as yaml-cpp keeps it) and sequences. The reader of the
// writer's own layout (tuning_cache_read_fast.cpp) builds one; tuning_cache_parse.cpp reads it
// through the same questions it asks of a yaml-cpp node (yaml_cpp_view.h), so both give one
// result. Internal to autotune/.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "autotune/yaml_scalar.h"

namespace tunecnn {

struct YamlNode {
  enum class Kind { undefined, null, scalar, map, sequence };

  Kind kind = Kind::undefined;
  std::string text;                                // a scalar's
  std::vector<std::pair<YamlNode, YamlNode>> map;  // a map's pairs
  std::vector<YamlNode> sequence;                  // a sequence's items

  bool defined() const { return kind != Kind::undefined; }
  bool is_null() const { return kind == Kind::null; }
  bool is_scalar() const { return kind == Kind::scalar; }
  bool is_map() const { return kind == Kind::map; }
  bool is_sequence() const { return kind == Kind::sequence; }
  const std::string& scalar() const { return text; }  // empty unless a scalar, as in yaml-cpp
  std::size_t size() const { return is_map() ? map.size() : sequence.size(); }
  const YamlNode& at(std::size_t index) const { return sequence[index]; }
  const std::vector<std::pair<YamlNode, YamlNode>>& pairs() const { return map; }
  const std::vector<YamlNode>& items() const { return sequence; }

  // The scalar as yaml-cpp's as<T>() reads it; nullopt where that throws.
  template <class T>
  std::optional<T> as() const {
    if constexpr (std::is_same_v<T, std::string>)
      return text;
    else
      return read_yaml_scalar<T>(text);
  }

  // The value of a map's first pair whose key is the scalar `name` (yaml-cpp's lookup); an
  // undefined node when there is none or this is not a map.
  const YamlNode& child(std::string_view name) const;

  bool operator==(const YamlNode&) const = default;
};

// The text as tuning_cache_emit.cpp writes it, and as a person may edit it without changing its
// layout: block maps and sequences of maps indented two spaces a level, plain scalars of a
// narrow alphabet, `{}` and `[]`, comment lines at the left margin. nullopt for anything else
// (quotes, flow style, anchors, tabs, another indentation, a multi-line scalar...), which
// yaml-cpp then reads: every text this accepts means the same to yaml-cpp.
std::optional<YamlNode> read_emitted_yaml(std::string_view text);

}  // namespace tunecnn
