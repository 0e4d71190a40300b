// The tuner's choice among timed candidates: the winner within the noise (choose_candidate) and
// each layout's fastest (best_per_layout), which the layout planner weighs against each other.
#include <algorithm>
#include <functional>
#include <vector>

#include "autotune/call_timing.h"
#include "autotune/candidate_search.h"

namespace tunecnn {

// Among eligible correct candidates, those within the noise of the fastest are ties; the tie goes
// to a deterministic candidate, then the least workspace, then the earliest in enumeration order
// (registry, layout, config), so equal timings always give the same plan.
const CandidateResult* choose_candidate(const std::vector<CandidateResult>& candidates,
                                        const std::function<bool(const CandidateResult&)>& eligible) {
  const auto ok = [&](const CandidateResult& c) { return c.correct && c.runs > 0 && eligible(c); };
  const CandidateResult* best = nullptr;
  for (const CandidateResult& c : candidates)
    if (ok(c) && (best == nullptr || c.median_ms < best->median_ms)) best = &c;
  if (best == nullptr) return nullptr;
  // Within the noise: the floor, or the two timings' spreads together when that is larger (a
  // candidate whose own calls varied by 0.5 ms is not known to be 0.4 ms slower).
  const auto tied = [&](const CandidateResult& c) {
    return c.median_ms <= best->median_ms + std::max(best->spread_ms + c.spread_ms, kTieFraction * best->median_ms);
  };
  const auto preferred = [](const CandidateResult& c, const CandidateResult& pick) {
    if (c.deterministic != pick.deterministic) return c.deterministic;
    if (c.workspace_bytes != pick.workspace_bytes) return c.workspace_bytes < pick.workspace_bytes;
    return &c < &pick;  // in order: the first of equals stays
  };
  const CandidateResult* pick = best;
  for (const CandidateResult& c : candidates)
    if (ok(c) && tied(c) && preferred(c, *pick)) pick = &c;
  return pick;
}

std::vector<CandidateResult> best_per_layout(const std::vector<CandidateResult>& candidates) {
  std::vector<CandidateResult> best;
  for (const CandidateResult& c : candidates) {
    if (!c.correct || c.runs == 0) continue;
    auto same = std::find_if(best.begin(), best.end(),
                             [&](const CandidateResult& b) { return b.layout == c.layout; });
    if (same == best.end())
      best.push_back(c);
    else if (c.median_ms < same->median_ms)
      *same = c;
  }
  std::sort(best.begin(), best.end(), [](const CandidateResult& a, const CandidateResult& b) {
    return a.median_ms < b.median_ms;
  });
  return best;
}

}  // namespace tunecnn
