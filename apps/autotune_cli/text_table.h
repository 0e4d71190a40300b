#pragma once
// Plain-text tables and the number formats the `autotune` reports share.
#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

namespace tunecnn {

class TextTable {
 public:
  // Columns whose header is in `right_aligned` line up on the right (numbers).
  explicit TextTable(std::vector<std::string> headers, std::vector<std::string> right_aligned = {});
  void add_row(std::vector<std::string> cells);  // as many cells as headers
  bool empty() const { return rows_.empty(); }
  // Each line starts with `indent`; columns are two spaces apart; no trailing blanks.
  void print(std::ostream& out, const std::string& indent = "  ") const;

 private:
  std::vector<std::string> headers_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

std::string format_ms(double ms);             // "12.345"
std::string format_bytes(std::size_t bytes);  // "0", "512 B", "1.5 KiB", "12.0 MiB"
std::string format_speedup(double ratio);     // "1.73x"

}  // namespace tunecnn
