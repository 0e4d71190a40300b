#include "apps/bench/conv_results.h"

#include <cstdio>
#include <map>
#include <type_traits>
#include <utility>

namespace tunecnn {
namespace {

// The columns the issue asks for come first, in its order; later columns only ever get appended.
constexpr const char* kCsvHeader =
    "layer,solver,direction,batch,median_ms,gflops,workspace_bytes,peak_bytes,config,pytorch_ms,"
    "ratio,fastest,pytorch_peak_bytes,layout,runs,min_ms,max_ms\n";

std::string number(double value, const char* format = "%.6g") {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

template <class T>
std::string optional_number(const std::optional<T>& value, const char* format = "%.6g") {
  if (!value) return "";
  if constexpr (std::is_integral_v<T>)
    return std::to_string(*value);
  else
    return number(*value, format);
}

std::string csv_line(const ConvBenchRow& row) {
  std::string line = csv_field(row.layer) + "," + csv_field(row.solver) + "," +
                     std::string(to_string(row.dir)) + "," + std::to_string(row.batch) + ",";
  line += number(row.median_ms(), "%.6f") + "," + number(row.gflops(), "%.3f") + ",";
  line += std::to_string(row.workspace_bytes) + "," + std::to_string(row.peak_bytes) + ",";
  line += csv_field(row.config) + "," + optional_number(row.pytorch_ms, "%.6f") + ",";
  line += optional_number(row.ratio(), "%.4f") + "," + (row.fastest ? "1" : "0") + ",";
  line += optional_number(row.pytorch_peak_bytes) + "," + std::string(to_string(row.layout)) + ",";
  line += std::to_string(row.timing.runs) + "," + number(1e3 * row.timing.min_s, "%.6f") + ",";
  return line + number(1e3 * row.timing.max_s, "%.6f") + "\n";
}

}  // namespace

double ConvBenchRow::gflops() const {
  return timing.median_s > 0 ? 2.0 * static_cast<double>(macs) / timing.median_s / 1e9 : 0;
}

std::optional<double> ConvBenchRow::ratio() const {
  if (!pytorch_ms || timing.median_s <= 0) return std::nullopt;
  return *pytorch_ms / median_ms();
}

void mark_fastest(std::vector<ConvBenchRow>& rows) {
  std::map<std::pair<std::string, Direction>, ConvBenchRow*> best;
  for (ConvBenchRow& row : rows) {
    row.fastest = false;
    ConvBenchRow*& current = best[{row.layer, row.dir}];
    if (current == nullptr || row.timing.median_s < current->timing.median_s) current = &row;
  }
  for (auto& [key, row] : best) row->fastest = true;
}

const ConvBenchRow* fastest_row(const std::vector<ConvBenchRow>& rows, const std::string& layer,
                                Direction dir) {
  for (const ConvBenchRow& row : rows)
    if (row.fastest && row.layer == layer && row.dir == dir) return &row;
  return nullptr;
}

const ConvBenchRow* fastest_row_of(const std::vector<ConvBenchRow>& rows, const std::string& layer,
                                   Direction dir, const std::string& solver) {
  return fastest_row_if(rows, layer, dir, [&](const ConvBenchRow& row) { return row.solver == solver; });
}

const ConvBenchRow* fastest_row_if(const std::vector<ConvBenchRow>& rows, const std::string& layer,
                                   Direction dir, const std::function<bool(const ConvBenchRow&)>& pick) {
  const ConvBenchRow* best = nullptr;
  for (const ConvBenchRow& row : rows)
    if (row.layer == layer && row.dir == dir && pick(row) &&
        (best == nullptr || row.timing.median_s < best->timing.median_s))
      best = &row;
  return best;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string conv_bench_csv(const std::vector<ConvBenchRow>& rows) {
  std::string text = kCsvHeader;
  for (const ConvBenchRow& row : rows) text += csv_line(row);
  return text;
}

}  // namespace tunecnn
