#pragma once
// A yaml-cpp node asked the questions tuning_cache_parse.cpp asks of a YamlNode (yaml_node.h), each
// answered by the yaml-cpp call the parser made before there were two readers, so a file the
// fast reader refuses is read exactly as it always was. Internal to autotune/.
#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tunecnn {

class YamlCppView {
 public:
  explicit YamlCppView(YAML::Node node) : node_(std::move(node)) {}

  bool defined() const { return node_.IsDefined(); }
  bool is_null() const { return node_.IsNull(); }
  bool is_scalar() const { return node_.IsScalar(); }
  bool is_map() const { return node_.IsMap(); }
  bool is_sequence() const { return node_.IsSequence(); }
  const std::string& scalar() const { return node_.Scalar(); }
  std::size_t size() const { return node_.size(); }
  template <class T>
  std::optional<T> as() const {
    try {
      return node_.as<T>();
    } catch (const YAML::Exception&) {
      return std::nullopt;
    }
  }
  YamlCppView at(std::size_t index) const { return YamlCppView(node_[index]); }
  YamlCppView child(std::string_view name) const { return YamlCppView(node_[std::string(name)]); }

  std::vector<std::pair<YamlCppView, YamlCppView>> pairs() const {
    std::vector<std::pair<YamlCppView, YamlCppView>> out;
    for (const auto& item : node_) out.emplace_back(YamlCppView(item.first), YamlCppView(item.second));
    return out;
  }
  std::vector<YamlCppView> items() const {
    std::vector<YamlCppView> out;
    for (const auto& item : node_) out.emplace_back(item);
    return out;
  }

 private:
  const YAML::Node node_;
};

}  // namespace tunecnn
