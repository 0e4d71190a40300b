#include "apps/bench/tuning_breakdown.h"

#include <cstdio>
#include <map>
#include <ostream>

#include "core/error.h"

namespace tunecnn {
namespace {

struct Totals {
  int keys = 0, candidates = 0, calls = 0;
  double total_s = 0, verify_s = 0, timing_s = 0;
  void add(const SearchCost& search) {
    ++keys;
    total_s += search.total_s;
    for (const CandidateCost& c : search.candidates) {
      ++candidates;
      calls += c.calls;
      verify_s += c.verify_s;
      timing_s += c.timing_s;
    }
  }
  double other_s() const { return total_s - verify_s - timing_s; }
};

std::string line(const char* format, auto... values) {
  char buf[512];
  std::snprintf(buf, sizeof buf, format, values...);
  return buf;
}

std::string totals_row(const std::string& name, const Totals& t) {
  return line("# %-8s %5d %9.3f %9.3f %9.3f %9.3f %10d %6d\n", name.c_str(), t.keys, t.total_s,
              t.verify_s, t.timing_s, t.other_s(), t.candidates, t.calls);
}

}  // namespace

void check_breakdown_detail(const std::string& detail) {
  TUNECNN_CHECK(detail.empty() || detail == "keys" || detail == "candidates",
                "bench plans: --breakdown '", detail, "' is unknown; use keys or candidates");
}

void TuningBreakdown::attach(TunerOptions& options) {
  options.on_cost = [this](const SearchCost& cost) { searches_.push_back(cost); };
}

void TuningBreakdown::print(std::ostream& out, const std::string& detail, double pass_s,
                            double tuner_s) const {
  std::map<std::string, Totals> by_kind;
  Totals all;
  for (const SearchCost& s : searches_) by_kind[s.what].add(s), all.add(s);
  out << "# profiling breakdown (seconds; other = arguments, reference inputs, search overhead)\n"
      << line("# %-8s %5s %9s %9s %9s %9s %10s %6s\n", "kind", "keys", "total", "verify", "timing",
              "other", "candidates", "calls");
  for (const auto& [kind, t] : by_kind) out << totals_row(kind, t);
  out << totals_row("all", all)
      << line("# in the tuners outside the searches: %.3f s\n", tuner_s - all.total_s)
      << line("# outside the tuners (transform calibration, cache writes, planning): %.3f s\n",
              pass_s - tuner_s);
  for (const SearchCost& s : searches_) {
    Totals t;
    t.add(s);
    out << line("# %8.3f s  verify %.3f  timing %.3f  other %.3f  %2d candidates %3d calls  %s\n",
                t.total_s, t.verify_s, t.timing_s, t.other_s(), t.candidates, t.calls, s.key.c_str());
    if (detail != "candidates") continue;
    for (const CandidateCost& c : s.candidates)
      out << line("#     verify %7.2f ms  warm-up %7.2f ms  timed %8.2f ms  %3d calls  %s\n",
                  c.verify_s * 1e3, c.warmup_s * 1e3, (c.timing_s - c.warmup_s) * 1e3, c.calls,
                  c.candidate.c_str());
  }
}

}  // namespace tunecnn
