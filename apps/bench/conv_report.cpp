#include "apps/bench/conv_report.h"

#include <cstdarg>
#include <cstdio>
#include <ostream>
#include <string>

namespace tunecnn {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::string formatted(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string formatted(const char* fmt, ...) {
  char text[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(text, sizeof text, fmt, args);
  va_end(args);
  return text;
}

std::string ratio_text(const std::optional<double>& ratio) {
  return ratio ? formatted("%.2f", *ratio) : "-";
}

std::string solver_and_config(const ConvBenchRow& row) {
  return row.config.empty() ? row.solver : row.solver + " " + row.config;
}

// Sums of our fastest and PyTorch's times over the layers where both were measured.
struct Totals {
  double ours_ms = 0, pytorch_ms = 0;
  int layers = 0;
  void add(double ours, double theirs) {
    ours_ms += ours;
    pytorch_ms += theirs;
    ++layers;
  }
  std::string ratio() const { return layers ? formatted("%.2f", pytorch_ms / ours_ms) : "-"; }
};

void print_direction_summary(std::ostream& out, const std::vector<ConvBenchRow>& rows,
                             const std::vector<ConvLayer>& layers, Direction dir) {
  const bool fwd = dir == Direction::fwd;
  out << "\n"
      << to_string(dir) << "\n"
      << formatted("%-8s %-28s %10s %11s %6s", "layer", "fastest", "ours_ms", "pytorch_ms", "ratio")
      << (fwd ? formatted(" %9s %17s", "peak_MiB", "pytorch_peak_MiB") : "") << "\n";
  Totals totals;
  for (const ConvLayer& layer : layers) {
    const ConvBenchRow* best = fastest_row(rows, layer.name, dir);
    if (best == nullptr) continue;
    if (best->pytorch_ms) totals.add(best->median_ms(), *best->pytorch_ms);
    out << formatted("%-8s %-28s %10.3f %11s %6s", layer.name.c_str(),
                     solver_and_config(*best).c_str(), best->median_ms(),
                     best->pytorch_ms ? formatted("%.3f", *best->pytorch_ms).c_str() : "-",
                     ratio_text(best->ratio()).c_str());
    if (fwd)
      out << formatted(" %9.2f %17s", best->peak_bytes / kMiB,
                       best->pytorch_peak_bytes
                           ? formatted("%.2f", *best->pytorch_peak_bytes / kMiB).c_str()
                           : "-");
    out << "\n";
  }
  out << formatted("%-8s %-28s %10.3f %11.3f %6s  (layers with both)\n", "total", "",
                   totals.ours_ms, totals.pytorch_ms, totals.ratio().c_str());
}

// Best fwd + best bwd_data + best bwd_weights: one training step's conv time per layer.
void print_training_totals(std::ostream& out, const std::vector<ConvBenchRow>& rows,
                           const std::vector<ConvLayer>& layers) {
  out << "\nfwd + bwd_data + bwd_weights (each direction's fastest)\n"
      << formatted("%-8s %10s %11s %6s\n", "layer", "ours_ms", "pytorch_ms", "ratio");
  Totals all;
  for (const ConvLayer& layer : layers) {
    Totals one;
    bool complete = true;
    for (Direction dir : {Direction::fwd, Direction::bwd_data, Direction::bwd_weights}) {
      const ConvBenchRow* best = fastest_row(rows, layer.name, dir);
      if (best == nullptr || !best->pytorch_ms)
        complete = false;
      else
        one.add(best->median_ms(), *best->pytorch_ms);
    }
    if (!complete) continue;
    all.add(one.ours_ms, one.pytorch_ms);
    out << formatted("%-8s %10.3f %11.3f %6s\n", layer.name.c_str(), one.ours_ms, one.pytorch_ms,
                     one.ratio().c_str());
  }
  out << formatted("%-8s %10.3f %11.3f %6s\n", "total", all.ours_ms, all.pytorch_ms,
                   all.ratio().c_str());
}

}  // namespace

void print_table_header(std::ostream& out) {
  out << formatted("%-8s %-11s   %-14s %-10s %-6s %10s %8s %14s %9s %5s %7s\n", "layer",
                   "direction", "solver", "config", "layout", "median_ms", "GFLOP/s",
                   "workspace_MiB", "peak_MiB", "runs", "ratio");
}

void print_table_group(std::ostream& out, const std::vector<ConvBenchRow>& group) {
  for (const ConvBenchRow& row : group)
    out << formatted(
        "%-8s %-11s %c %-14s %-10s %-6s %10.3f %8.1f %14.2f %9.2f %5d %7s\n", row.layer.c_str(),
        std::string(to_string(row.dir)).c_str(), row.fastest ? '*' : ' ', row.solver.c_str(),
        row.config.empty() ? "-" : row.config.c_str(), std::string(to_string(row.layout)).c_str(),
        row.median_ms(), row.gflops(), row.workspace_bytes / kMiB, row.peak_bytes / kMiB,
        row.timing.runs, ratio_text(row.ratio()).c_str());
  if (group.empty() || !group.front().pytorch_ms) return;
  const ConvBenchRow& any = group.front();
  const double ms = *any.pytorch_ms;
  out << formatted(
      "%-8s %-11s   %-14s %-10s %-6s %10.3f %8.1f %14s %9s %5s %7s\n", any.layer.c_str(),
      std::string(to_string(any.dir)).c_str(), "pytorch", "-", "NCHW", ms,
      2.0 * static_cast<double>(any.macs) / ms / 1e6, "-",
      any.pytorch_peak_bytes ? formatted("%.2f", *any.pytorch_peak_bytes / kMiB).c_str() : "-", "",
      "");
}

void print_summary(std::ostream& out, const std::vector<ConvBenchRow>& rows,
                   const std::vector<ConvLayer>& layers, const std::vector<Direction>& dirs) {
  out << "\nsummary: our fastest solver per layer against PyTorch "
         "(ratio = pytorch_ms / ours_ms; > 1: tunecnn is faster)\n";
  for (Direction dir : dirs) print_direction_summary(out, rows, layers, dir);
  if (dirs.size() == 3) print_training_totals(out, rows, layers);
}

std::int64_t paper_im2col_elements(const ConvProblem& p) {
  return std::int64_t{p.mb} * p.oh() * p.ow() * p.kh * p.kw * p.ic;
}

std::int64_t paper_mec_elements(const ConvProblem& p) {
  return std::int64_t{p.mb} * p.ow() * (p.ih + 2 * p.ph) * p.kw * p.ic;
}

void print_mec_memory(std::ostream& out, const std::vector<ConvLayer>& layers) {
  out << "# MEC paper's memory comparison, computed from the formulas (definitions, not "
         "measured),\n# in f32 elements for the whole batch: im2col lowers to mb*oh*ow*kh*kw*ic, "
         "MEC to mb*ow*(ih+2ph)*kw*ic\n"
      << formatted("# %-8s %14s %14s %7s\n", "layer", "im2col_MiB", "mec_MiB", "ratio");
  double ratio_sum = 0;
  for (const ConvLayer& layer : layers) {
    const double im2col = static_cast<double>(paper_im2col_elements(layer.problem));
    const double mec = static_cast<double>(paper_mec_elements(layer.problem));
    ratio_sum += im2col / mec;
    out << formatted("# %-8s %14.2f %14.2f %7.2f\n", layer.name.c_str(), 4 * im2col / kMiB,
                     4 * mec / kMiB, im2col / mec);
  }
  if (!layers.empty())
    out << formatted("# average im2col/MEC ratio %.2f (the paper reports 3.2x)\n",
                     ratio_sum / static_cast<double>(layers.size()));
}

}  // namespace tunecnn
