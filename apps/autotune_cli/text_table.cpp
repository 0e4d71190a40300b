#include "apps/autotune_cli/text_table.h"

#include <algorithm>
#include <cstdio>
#include <ostream>

#include "core/error.h"

namespace tunecnn {

TextTable::TextTable(std::vector<std::string> headers, std::vector<std::string> right_aligned)
    : headers_(std::move(headers)) {
  for (const std::string& header : headers_)
    right_.push_back(std::find(right_aligned.begin(), right_aligned.end(), header) !=
                     right_aligned.end());
}

void TextTable::add_row(std::vector<std::string> cells) {
  TUNECNN_CHECK(cells.size() == headers_.size(), "table row has ", cells.size(), " cells for ",
                headers_.size(), " columns");
  rows_.push_back(std::move(cells));
}

void TextTable::print(std::ostream& out, const std::string& indent) const {
  std::vector<std::size_t> width(headers_.size());
  for (std::size_t c = 0; c < headers_.size(); ++c) {
    width[c] = headers_[c].size();
    for (const auto& row : rows_) width[c] = std::max(width[c], row[c].size());
  }
  const auto print_row = [&](const std::vector<std::string>& cells) {
    std::string line = indent;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::string pad(width[c] - cells[c].size(), ' ');
      line += right_[c] ? pad + cells[c] : cells[c] + pad;
      if (c + 1 < cells.size()) line += "  ";
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << "\n";
  };
  print_row(headers_);
  for (const auto& row : rows_) print_row(row);
}

std::string format_ms(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", ms);
  return text;
}

std::string format_bytes(std::size_t bytes) {
  if (bytes < 1024) return bytes == 0 ? "0" : std::to_string(bytes) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 3) value /= 1024, ++unit;
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
  return text;
}

std::string format_speedup(double ratio) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2fx", ratio);
  return text;
}

}  // namespace tunecnn
