#include "apps/bench/conv_report.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <ostream>
#include <string>

namespace tunecnn {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::string ratio_text(const std::optional<double>& ratio) {
  return ratio ? formatted("%.2f", *ratio) : "-";
}

std::string solver_and_config(const ConvBenchRow& row) {
  return row.config.empty() ? row.solver : row.solver + " " + row.config;
}

// Our fastest times summed over every layer; PyTorch's over the layers it ran ("matched").
struct Totals {
  double ours_ms = 0, matched_ours_ms = 0, pytorch_ms = 0;
  int layers = 0, matched = 0;
  void add(double ours, std::optional<double> theirs) {
    ours_ms += ours;
    ++layers;
    if (!theirs) return;
    matched_ours_ms += ours;
    pytorch_ms += *theirs;
    ++matched;
  }
  std::optional<double> pytorch() const {
    return matched == layers && layers > 0 ? std::optional(pytorch_ms) : std::nullopt;
  }
  std::optional<double> ratio() const {
    return pytorch() ? std::optional(pytorch_ms / ours_ms) : std::nullopt;
  }
};

std::string ms_text(const std::optional<double>& ms) {
  return ms ? formatted("%.3f", *ms) : "-";
}

// "total" over every layer; when PyTorch missed some, also "matched": the layers it ran.
void print_totals(std::ostream& out, const Totals& t, const char* row_format) {
  out << formatted(row_format, "total", t.ours_ms, ms_text(t.pytorch()).c_str(),
                   ratio_text(t.ratio()).c_str());
  if (t.matched == 0 || t.matched == t.layers) return;
  out << formatted(row_format, "matched", t.matched_ours_ms, ms_text(t.pytorch_ms).c_str(),
                   ratio_text(t.pytorch_ms / t.matched_ours_ms).c_str());
}

void print_direction_summary(std::ostream& out, const std::vector<ConvBenchRow>& rows,
                             const std::vector<ConvLayer>& layers, Direction dir) {
  const bool fwd = dir == Direction::fwd;
  out << "\n"
      << to_string(dir) << "\n"
      << formatted("%-8s %-44s %10s %11s %6s", "layer", "fastest", "ours_ms", "pytorch_ms", "ratio")
      << (fwd ? formatted(" %9s %17s", "peak_MiB", "pytorch_peak_MiB") : "") << "\n";
  Totals totals;
  for (const ConvLayer& layer : layers) {
    const ConvBenchRow* best = fastest_row(rows, layer.name, dir);
    if (best == nullptr) continue;
    totals.add(best->median_ms(), best->pytorch_ms);
    out << formatted("%-8s %-44s %10.3f %11s %6s", layer.name.c_str(),
                     solver_and_config(*best).c_str(), best->median_ms(),
                     ms_text(best->pytorch_ms).c_str(), ratio_text(best->ratio()).c_str());
    if (fwd)
      out << formatted(" %9.2f %17s", best->peak_bytes / kMiB,
                       best->pytorch_peak_bytes
                           ? formatted("%.2f", *best->pytorch_peak_bytes / kMiB).c_str()
                           : "-");
    out << "\n";
  }
  print_totals(out, totals, "%-53s %10.3f %11s %6s\n");  // the width of "layer fastest"
}

// Best fwd + best bwd_data + best bwd_weights: one training step's conv time per layer.
void print_training_totals(std::ostream& out, const std::vector<ConvBenchRow>& rows,
                           const std::vector<ConvLayer>& layers) {
  out << "\nfwd + bwd_data + bwd_weights (each direction's fastest)\n"
      << formatted("%-8s %10s %11s %6s\n", "layer", "ours_ms", "pytorch_ms", "ratio");
  Totals all;
  for (const ConvLayer& layer : layers) {
    Totals one;
    for (Direction dir : {Direction::fwd, Direction::bwd_data, Direction::bwd_weights})
      if (const ConvBenchRow* best = fastest_row(rows, layer.name, dir))
        one.add(best->median_ms(), best->pytorch_ms);
    if (one.layers != 3) continue;  // a direction had no applicable solver
    all.add(one.ours_ms, one.pytorch());
    out << formatted("%-8s %10.3f %11s %6s\n", layer.name.c_str(), one.ours_ms,
                     ms_text(one.pytorch()).c_str(), ratio_text(one.ratio()).c_str());
  }
  print_totals(out, all, "%-8s %10.3f %11s %6s\n");
}

// MEC's measure over another solver's; nullopt when either is missing or the other's is zero
// (a cuDNN algorithm without workspace has no ratio to speak of).
std::optional<double> over(const ConvBenchRow* mec, const ConvBenchRow* other, double mec_value,
                           double other_value) {
  if (mec == nullptr || other == nullptr || !(other_value > 0)) return std::nullopt;
  return mec_value / other_value;
}

constexpr const char* kRatioPartners[] = {"im2col_gemm", "cudnn"};

std::string time_ratio_title(const char* partner) { return "ms mec/" + std::string(partner); }
std::string memory_ratio_title(const char* partner) { return "MiB mec/" + std::string(partner); }
int width_of(const std::string& title) { return static_cast<int>(title.size()); }

void print_comparison_header(std::ostream& out, const std::vector<std::string>& solvers) {
  out << formatted("%-8s %-11s", "layer", "direction");
  for (const std::string& name : solvers)
    out << formatted(" %*s %*s", static_cast<int>(name.size()) + 3, (name + "_ms").c_str(),
                     static_cast<int>(name.size()) + 4, (name + "_MiB").c_str());
  for (const char* partner : kRatioPartners)
    out << " " << time_ratio_title(partner) << " " << memory_ratio_title(partner);
  out << "  mec_config\n";
}

void print_comparison_row(std::ostream& out, const std::vector<ConvBenchRow>& rows,
                          const ConvLayer& layer, Direction dir,
                          const std::vector<std::string>& solvers) {
  const auto best = [&](const std::string& solver) {
    return fastest_row_of(rows, layer.name, dir, solver);
  };
  out << formatted("%-8s %-11s", layer.name.c_str(), std::string(to_string(dir)).c_str());
  for (const std::string& name : solvers) {
    const ConvBenchRow* row = best(name);
    out << formatted(" %*s %*s", static_cast<int>(name.size()) + 3,
                     row ? formatted("%.3f", row->median_ms()).c_str() : "-",
                     static_cast<int>(name.size()) + 4,
                     row ? formatted("%.2f", row->workspace_bytes / kMiB).c_str() : "-");
  }
  const ConvBenchRow* mec = best("mec");
  for (const char* partner : kRatioPartners) {
    const ConvBenchRow* other = best(partner);
    const auto time = over(mec, other, mec ? mec->median_ms() : 0, other ? other->median_ms() : 0);
    const auto memory =
        over(mec, other, mec ? static_cast<double>(mec->workspace_bytes) : 0,
             other ? static_cast<double>(other->workspace_bytes) : 0);
    out << formatted(" %*s %*s", width_of(time_ratio_title(partner)), ratio_text(time).c_str(),
                     width_of(memory_ratio_title(partner)), ratio_text(memory).c_str());
  }
  out << "  " << (mec ? solver_and_config(*mec) : "-") << "\n";
}

}  // namespace

std::string formatted(const char* fmt, ...) {
  char text[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(text, sizeof text, fmt, args);
  va_end(args);
  return text;
}

void print_mec_comparison(std::ostream& out, const std::vector<ConvBenchRow>& rows,
                          const std::vector<ConvLayer>& layers, const std::vector<Direction>& dirs,
                          const std::vector<std::string>& solvers) {
  out << "\nMEC against im2col_gemm and cuDNN (the MEC paper's comparison): each solver's fastest "
         "config, its median ms and workspace MiB; mec/X = MEC's over X's (< 1: MEC is faster or "
         "smaller; - where one was not timed or X used no workspace)\n";
  print_comparison_header(out, solvers);
  for (const ConvLayer& layer : layers)
    for (Direction dir : dirs) print_comparison_row(out, rows, layer, dir, solvers);
}

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
  const bool pytorch =
      std::any_of(rows.begin(), rows.end(), [](const ConvBenchRow& row) { return row.pytorch_ms; });
  out << "\nsummary: our fastest solver per layer"
      << (pytorch ? " against PyTorch (ratio = pytorch_ms / ours_ms; > 1: tunecnn is faster)"
                  : " (PyTorch was off)")
      << "\n";
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
