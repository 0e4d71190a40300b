#include "apps/bench/conv_vendor_report.h"

#include <algorithm>
#include <ostream>
#include <string>

#include "apps/bench/conv_report.h"

namespace tunecnn {
namespace {

// layer, direction, ours, ours_ms, onednn, onednn_ms, pytorch_ms, ratio
constexpr const char* kRow = "%-8s %-11s %-30s %9s  %-38s %9s %10s %7s\n";

std::string ms_or_dash(const ConvBenchRow* row) {
  return row ? formatted("%.3f", row->median_ms()) : "-";
}

std::string label(const ConvBenchRow* row) {
  if (row == nullptr) return "-";
  return row->config.empty() ? row->solver : row->solver + " " + row->config;
}

// Sums over the layers where both sides ran.
struct Sums {
  double ours_ms = 0, onednn_ms = 0;
  int layers = 0;
};

void print_row(std::ostream& out, const std::string& layer, Direction dir, const ConvBenchRow* ours,
               const ConvBenchRow* onednn, Sums& sums) {
  std::string ratio = "-", pytorch = "-";
  if (ours && onednn) {
    ratio = formatted("%.2f", onednn->median_ms() / ours->median_ms());
    sums.ours_ms += ours->median_ms();
    sums.onednn_ms += onednn->median_ms();
    ++sums.layers;
  }
  const ConvBenchRow* any = ours ? ours : onednn;
  if (any && any->pytorch_ms) pytorch = formatted("%.3f", *any->pytorch_ms);
  out << formatted(kRow, layer.c_str(), std::string(to_string(dir)).c_str(), label(ours).c_str(),
                   ms_or_dash(ours).c_str(), label(onednn).c_str(), ms_or_dash(onednn).c_str(),
                   pytorch.c_str(), ratio.c_str());
}

}  // namespace

bool is_onednn_solver(std::string_view solver) {
  return solver.starts_with("onednn");
}

void print_onednn_comparison(std::ostream& out, const std::vector<ConvBenchRow>& rows,
                             const std::vector<ConvLayer>& layers, const std::vector<Direction>& dirs) {
  if (std::none_of(rows.begin(), rows.end(), [](const ConvBenchRow& r) { return is_onednn_solver(r.solver); }))
    return;
  out << "\nour algorithms against oneDNN: the fastest of our own solvers and oneDNN's fastest "
         "implementation (blocked=1: activations reordered to its format and back inside the "
         "call, timed); ratio = onednn_ms / ours_ms (> 1: ours is faster)\n";
  out << formatted(kRow, "layer", "direction", "ours", "ours_ms", "onednn", "onednn_ms", "pytorch_ms",
                   "ratio");
  Sums sums;
  for (const Direction dir : dirs) {
    for (const ConvLayer& layer : layers) {
      const ConvBenchRow* ours = fastest_row_if(rows, layer.name, dir, [](const ConvBenchRow& r) {
        return !is_onednn_solver(r.solver);
      });
      const ConvBenchRow* onednn = fastest_row_if(rows, layer.name, dir, [](const ConvBenchRow& r) {
        return is_onednn_solver(r.solver);
      });
      if (ours || onednn) print_row(out, layer.name, dir, ours, onednn, sums);
    }
  }
  if (sums.layers > 0)
    out << formatted("total over the %d layer x direction pairs both ran: ours %.3f ms, oneDNN %.3f ms, "
                     "ratio %.2f\n",
                     sums.layers, sums.ours_ms, sums.onednn_ms, sums.onednn_ms / sums.ours_ms);
}

}  // namespace tunecnn
