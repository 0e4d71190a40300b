// Reading the tuning cache's YAML in the layout tuning_cache_emit.cpp writes, line by line into a
// YamlNode: parse_tuning_cache on a 457 KB cache took about 100 ms through yaml-cpp (its scanner
// and nodes, and a stringstream per number), most of what `predict` took, and takes about 4 ms
// this way. Anything outside that layout is refused, and parse_tuning_cache then reads the text
// with yaml-cpp; so this reader need not know YAML's corner cases, only that each line it
// accepts means the same to yaml-cpp (tests and the tuning_cache fuzz target compare the two
// readers).
//
// A line is a comment at the left margin, empty, or `INDENT [- ]KEY:[ VALUE]`, where VALUE is a
// plain scalar, `{}` or `[]`. A key without a value opens a block two columns deeper: a map, a
// sequence of maps whose items start with `- `, their first pair on the dash's line, or a line
// `[]` alone (yaml-cpp writes an empty list so).
#include <cctype>
#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "autotune/yaml_node.h"

namespace tunecnn {

const YamlNode& YamlNode::child(std::string_view name) const {
  static const YamlNode undefined;
  for (const auto& [key, value] : map)
    if (key.is_scalar() && key.text == name) return value;
  return undefined;
}

namespace {

// One line `INDENT [- ]KEY:[ VALUE]`, or `INDENT {}` or `INDENT []` alone.
struct Line {
  int key_column = 0;
  bool dash = false;  // the first pair of a sequence item: its dash is two columns left of the key
  std::string_view key;
  std::optional<std::string_view> value;  // absent: a block follows
  bool alone = false;                     // `{}` or `[]` alone, the value of the key above
};

bool is_empty_collection(std::string_view text) {
  return text == "{}" || text == "[]";
}

bool is_printable_ascii(char c) {
  return c >= 0x20 && c <= 0x7e;
}

// The YAML scalars yaml-cpp reads as null rather than as text; refused, so the reader need not
// tell them apart.
bool reads_as_null(std::string_view text) {
  return text == "null" || text == "Null" || text == "NULL";
}

// Text that YAML reads back as exactly itself wherever it starts a plain scalar on one line: it
// starts with no indicator, holds no comment (#) and no `: ` (a mapping), and ends with neither a
// colon nor a space (trimmed).
bool is_plain_text(std::string_view text) {
  if (text.empty() || reads_as_null(text)) return false;
  if (text.find('#') != std::string_view::npos || text.find(": ") != std::string_view::npos) return false;
  return text.back() != ':' && text.back() != ' ';
}

bool starts_plainly(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '(' || c == '/';
}

// A key starts with a letter, digit, `_`, `(` or `/` (never `---` or `...`, the document markers)
// and holds no colon; yaml-cpp takes a key on one line of at most 1024 characters.
bool is_plain_key(std::string_view key) {
  return is_plain_text(key) && starts_plainly(key.front()) && key.find(':') == std::string_view::npos &&
         key.size() <= 1000;
}

// A value may also be a number written `-1.5`, `.5` or `.inf`.
bool is_plain_value(std::string_view value) {
  if (!is_plain_text(value)) return false;
  const char first = value.front();
  if (starts_plainly(first) || first == '.') return true;
  return first == '-' && value.size() > 1 &&
         (std::isalnum(static_cast<unsigned char>(value[1])) || value[1] == '.');
}

std::optional<Line> read_line(std::string_view text) {
  Line line;
  const std::size_t indent = text.find_first_not_of(' ');
  if (indent == std::string_view::npos) return std::nullopt;  // spaces only
  text.remove_prefix(indent);
  line.key_column = static_cast<int>(indent);
  if (is_empty_collection(text)) {
    line.alone = true;
    line.value = text;
    return line;
  }
  if (text.starts_with("- ")) {
    line.dash = true;
    line.key_column += 2;
    text.remove_prefix(2);
  }
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  line.key = text.substr(0, colon);
  if (!is_plain_key(line.key)) return std::nullopt;
  const std::string_view rest = text.substr(colon + 1);
  if (rest.empty()) return line;
  if (!rest.starts_with(' ')) return std::nullopt;
  line.value = rest.substr(1);
  if (!is_empty_collection(*line.value) && !is_plain_value(*line.value)) return std::nullopt;
  return line;
}

// The lines that carry pairs; nullopt when any line is outside the layout.
std::optional<std::vector<Line>> read_lines(std::string_view text) {
  std::vector<Line> lines;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    const std::string_view raw = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (raw.empty() || raw.front() == '#') continue;
    for (const char c : raw)
      if (!is_printable_ascii(c)) return std::nullopt;  // tabs, CR, control bytes, UTF-8
    std::optional<Line> line = read_line(raw);
    if (!line) return std::nullopt;
    lines.push_back(*line);
  }
  return lines;
}

YamlNode scalar_node(std::string_view text) {
  YamlNode node;
  if (text == "{}") {
    node.kind = YamlNode::Kind::map;
  } else if (text == "[]") {
    node.kind = YamlNode::Kind::sequence;
  } else {
    node.kind = YamlNode::Kind::scalar;
    node.text = text;
  }
  return node;
}

// Builds the blocks from the lines; `ok` turns false at the first line out of place.
class BlockReader {
 public:
  explicit BlockReader(const std::vector<Line>& lines) : lines_(lines) {}

  std::optional<YamlNode> document() {
    YamlNode root = map_at(0, false);
    if (!ok_ || pos_ != lines_.size() || root.map.empty()) return std::nullopt;
    return root;
  }

 private:
  // The pairs whose keys sit at `column`; the first may be on a sequence item's dash line.
  YamlNode map_at(int column, bool first_on_dash) {
    YamlNode node;
    node.kind = YamlNode::Kind::map;
    while (ok_ && pos_ < lines_.size()) {
      const Line& line = lines_[pos_];
      const bool first = node.map.empty();
      if (line.key_column < column || (line.dash && !(first && first_on_dash))) break;
      if (line.key_column > column || line.alone) return fail();
      ++pos_;
      YamlNode key = scalar_node(line.key);
      node.map.emplace_back(std::move(key), line.value ? scalar_node(*line.value) : block_under(column));
    }
    return node;
  }

  // What a key without a value at `column` holds: the block two columns deeper.
  YamlNode block_under(int column) {
    if (pos_ == lines_.size()) return fail();
    const Line& next = lines_[pos_];
    const int deeper = column + 2;
    if (next.alone && next.key_column == deeper) return scalar_node(*lines_[pos_++].value);
    if (next.dash && next.key_column == deeper + 2) return sequence_at(deeper);
    if (!next.dash && next.key_column == deeper) return map_at(deeper, false);
    return fail();
  }

  // The items whose dashes sit at `column`, each a map.
  YamlNode sequence_at(int column) {
    YamlNode node;
    node.kind = YamlNode::Kind::sequence;
    while (ok_ && pos_ < lines_.size() && lines_[pos_].dash && lines_[pos_].key_column == column + 2)
      node.sequence.push_back(map_at(column + 2, true));
    return node;
  }

  YamlNode fail() {
    ok_ = false;
    return {};
  }

  const std::vector<Line>& lines_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace

std::optional<YamlNode> read_emitted_yaml(std::string_view text) {
  const std::optional<std::vector<Line>> lines = read_lines(text);
  if (!lines) return std::nullopt;
  return BlockReader(*lines).document();
}

}  // namespace tunecnn
