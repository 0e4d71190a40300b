// The end of a search pass: the finalists timed again in alternation (the playoff), and a second
// call for a layout's fastest candidate that one cold call may have misjudged.
#include <algorithm>
#include <cstddef>
#include <functional>
#include <set>
#include <vector>

#include "autotune/call_timing.h"
#include "autotune/candidate_search.h"

namespace tunecnn {
namespace {

// A pass's finalists (the two fastest and each layout's fastest) within this factor of the
// fastest are timed again in alternation, for this many calls each.
constexpr double kPlayoffFactor = 1.15;
constexpr int kPlayoffRounds = 2;
// A layout's fastest candidate cut on its one cold call within this factor of the fastest gets a
// second call before the playoff (CandidateSearch::second_opinion).
constexpr double kSecondOpinionFactor = 2.5;

}  // namespace

// Each candidate was timed on its own, in whatever load the machine had at that moment, so a
// burst during the leader's calls can hand the win to a slower rival, and the best candidates of
// two layouts, which the layout DP weighs against each other, can swap places between runs. The
// finalists of this pass (the two fastest, and the fastest in each other layout) that are within
// kPlayoffFactor of the fastest are called in alternation (a, b, c, a, b, c, ...), so all see the
// same load, and those calls' medians replace their timings.
void CandidateSearch::playoff(const std::vector<SolverTrial>& trials, std::size_t first_number) {
  std::vector<std::size_t> timed;  // indices into results_, of this pass's timed candidates
  for (std::size_t i = 0; i < results_.size(); ++i)
    if (ranks_[i].first >= first_number && results_[i].correct && results_[i].runs > 0) timed.push_back(i);
  std::stable_sort(timed.begin(), timed.end(), [&](std::size_t a, std::size_t b) {
    return results_[a].median_ms < results_[b].median_ms;
  });
  std::vector<std::size_t> finalists;
  std::set<Layout> seen;
  for (std::size_t rank = 0; rank < timed.size(); ++rank) {
    const std::size_t index = timed[rank];
    const bool layout_best = seen.insert(results_[index].layout).second;
    const double fastest_ms = results_[timed[0]].median_ms;
    const bool close = results_[index].median_ms <= kPlayoffFactor * fastest_ms ||
                       (layout_best && second_opinion(trials, index, fastest_ms));
    if (close && (rank < 2 || layout_best)) finalists.push_back(index);
  }
  if (finalists.size() < 2) return;
  std::vector<CallSamples> samples(finalists.size());
  for (int round = 0; round < kPlayoffRounds; ++round)
    for (std::size_t k = 0; k < finalists.size(); ++k) time_one(call_of(trials, finalists[k]), clock_, samples[k]);
  for (std::size_t k = 0; k < finalists.size(); ++k) record(finalists[k], samples[k], kPlayoffRounds);
}

// A layout's fastest candidate that was cut on its one cold scouting call may have met a burst
// (on MobileNet one lasted through five candidates' calls and put every layout but the leader's
// at 2x), and then the layout DP weighs that layout at twice its cost. Within
// kSecondOpinionFactor of the fastest it gets one more call; when that one is within
// kPlayoffFactor, it is a finalist. One cut after a cold and a warm call was measured twice (on
// AlexNet a third call of direct_chwn cost 0.1 s per key and changed nothing).
bool CandidateSearch::second_opinion(const std::vector<SolverTrial>& trials, std::size_t index,
                                     double fastest_ms) {
  const CandidateResult& r = results_[index];
  if (costs_[index].calls > 1 || r.median_ms > kSecondOpinionFactor * fastest_ms) return false;
  CallSamples samples;
  samples.times = {r.median_ms / 1e3};
  time_one(call_of(trials, index), clock_, samples);
  record(index, samples, 1);  // both calls: their spread tells the layout DP how unsure they are
  return samples.times.back() * 1e3 <= kPlayoffFactor * fastest_ms;
}

std::function<void()> CandidateSearch::call_of(const std::vector<SolverTrial>& trials, std::size_t index) const {
  const CandidateResult& r = results_[index];
  const auto trial = std::find_if(trials.begin(), trials.end(), [&](const SolverTrial& t) {
    return t.solver == r.solver && t.layout == r.layout;
  });
  return [trial, config = r.config, bytes = r.workspace_bytes] { trial->run(config, bytes); };
}

// Replaces a candidate's timing with these calls', the last `new_calls` of which are added to
// what it has cost.
void CandidateSearch::record(std::size_t index, const CallSamples& samples, int new_calls) {
  const CallTiming t = summarise(samples);
  CandidateResult& r = results_[index];
  r.median_ms = t.median_ms;
  r.spread_ms = t.spread_ms;
  r.runs = t.runs;
  for (int k = 0; k < new_calls; ++k) costs_[index].timing_s += samples.times[samples.times.size() - 1 - k];
  costs_[index].calls += new_calls;
}

}  // namespace tunecnn
