#pragma once
// The softmax cross-entropy tuner: every applicable softmax solver (fused one-pass, five-pass),
// each checked once against a double-precision reference, then timed on the real problem
// (candidate_search.h). Logits are 2-D, so every candidate is recorded in NCHW, the layout of
// plain row-major tensors.
#include <vector>

#include "autotune/candidate_search.h"
#include "ops/softmax/problem.h"

namespace tunecnn {

// Throws Error when no solver runs the problem correctly.
TuningEntry tune_softmax(const SoftmaxProblem& problem, const TunerOptions& options);

// `--tune verify`: only the shortlisted solvers are checked and re-timed; a full tune_softmax,
// with a warning, when none of them runs correctly here.
TuningEntry retime_softmax_candidates(const SoftmaxProblem& problem,
                                      const std::vector<CandidateResult>& shortlist,
                                      const TunerOptions& options);

}  // namespace tunecnn
