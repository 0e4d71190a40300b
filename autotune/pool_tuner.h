#pragma once
// The pool tuner: for one pooling problem (forward or backward), every applicable pool solver in
// every layout it runs, its configs (the coarsening factor: (fx, fy) on the CPU, fx on the GPU)
// hill-climbed from coarsening 1 as Li et al. tune it, each candidate checked once against the
// direct reference on the same geometry with fewer channels, then timed on the real problem
// (candidate_search.h).
#include <vector>

#include "autotune/candidate_search.h"
#include "ops/pool/plan.h"

namespace tunecnn {

// Throws Error when no solver runs the problem correctly in options.layouts.
TuningEntry tune_pool(const PoolProblem& problem, const TunerOptions& options);

// `--tune verify`: only `shortlist` (another device's best per layout) is checked and re-timed;
// a full tune_pool, with a warning, when none of them runs correctly here.
TuningEntry retime_pool_candidates(const PoolProblem& problem,
                                   const std::vector<CandidateResult>& shortlist,
                                   const TunerOptions& options);

// The problem candidates are checked on: the same batch and geometry (a CHWN or NHWC kernel's
// vector paths depend on N and C) with the channels cut until the reference takes a fraction of
// a millisecond.
PoolProblem pool_verification_problem(const PoolProblem& problem);

}  // namespace tunecnn
