#pragma once
// The conv tuner: for one conv problem, try every applicable solver x layout x config through the
// common search (candidate_search.h), checking each candidate once against the direct reference
// on small data and timing the correct ones on the real problem.
#include <vector>

#include "autotune/candidate_search.h"
#include "ops/conv/plan.h"

namespace tunecnn {

// Tunes one problem (any direction). The direct reference is tried only when forced or when no
// other solver gives a correct candidate, since it is very slow. Throws Error when nothing at all
// can run the problem within the budget.
TuningEntry tune_conv(const ConvProblem& problem, const TunerOptions& options);

// The runnable plan an entry describes; throws Error when it names a solver this build lacks.
ConvPlan plan_from_entry(const TuningEntry& entry);

// `--tune verify`: checks and re-times only `shortlist` (typically best_per_layout of another
// device's entry) on this device and returns the entry they make. Falls back to a full tune_conv,
// with a warning, when none of them runs correctly here.
TuningEntry retime_candidates(const ConvProblem& problem, const std::vector<CandidateResult>& shortlist,
                              const TunerOptions& options);

// The same geometry at batch 2 with the spatial size reduced until the reference is cheap, and
// then, when still over about 1M multiply-adds and ungrouped, the channels (to one block of 48
// plus the same remainder); kernel, stride and padding kept. The tuner checks candidates on it.
ConvProblem verification_problem(const ConvProblem& problem);

}  // namespace tunecnn
