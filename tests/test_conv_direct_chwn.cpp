// direct_chwn on batches the solver suite does not reach: it covers the batch with blocks of 4
// and 2 full vectors, single vectors, half and quarter vectors and single lanes, and the suite's
// batches (at most 17) never fill a block of 2 or 4 vectors. 127 = 64 + 32 + 16 + 8 + 4 + 3
// in f32 lanes (16 per 512-bit vector) and uses every piece in f64 as well.
#include <gtest/gtest.h>

#include "ops/conv/registry.h"
#include "tests/support/conv_testing.h"

namespace tunecnn {
namespace {

using namespace tunecnn::testing;

struct BigBatchCase {
  const char* name;
  ConvProblem problem;  // forward, f32
};

// Channel counts that leave short register blocks (6 channels per block), kernel widths that
// leave short tap blocks (3 taps per block in bwd_weights), and windows large enough (5x5 x 128
// images) that fwd and bwd_data sum their channels in several passes.
const BigBatchCase kCases[] = {
    {"mb127_k3_s2_p1", {Direction::fwd, 127, 5, 6, 7, 8, 3, 3, 2, 2, 1, 1, 1}},
    {"mb64_groups2", {Direction::fwd, 64, 6, 5, 5, 10, 3, 3, 1, 1, 1, 1, 2}},
    {"mb127_depthwise", {Direction::fwd, 127, 3, 6, 6, 3, 3, 3, 1, 1, 1, 1, 3}},
    {"mb96_k3x5_aniso", {Direction::fwd, 96, 2, 7, 9, 9, 3, 5, 1, 2, 0, 2, 1}},
    {"mb128_k5_passes", {Direction::fwd, 128, 8, 6, 6, 7, 5, 5, 1, 1, 2, 2, 1}},
};

TEST(DirectChwn, LargeBatchesMatchTheReferenceInEveryDirection) {
  const ConvSolver& solver = *find_conv_solver("direct_chwn");
  for (const BigBatchCase& c : kCases)
    for (DType dt : {DType::f32, DType::f64})
      for (Direction dir : kAllDirections) {
        ConvProblem p = c.problem.with_dir(dir);
        p.dt = dt;
        ASSERT_TRUE(solver.applicable(p, nullptr)) << p.key();
        const ConvArgs args = make_conv_args(p, 7);
        const Tensor want = run_in_layout({&direct_conv_solver(), {}}, p, args, Layout::NCHW);
        const double tol = dt == DType::f64 ? 1e-12 : 1e-4;
        for (const TuneConfig& config : solver.configs(p))
          EXPECT_TRUE(
              close_relative(run_in_layout({&solver, config}, p, args, Layout::CHWN), want, tol))
              << c.name << " [" << config.str() << "] " << p.key();
      }
}

TEST(DirectChwn, RunsOnlyInChwnWithoutWorkspace) {
  const ConvSolver& solver = *find_conv_solver("direct_chwn");
  const ConvProblem p = kCases[0].problem;
  EXPECT_EQ(solver.layouts(p), std::vector<Layout>{Layout::CHWN});
  for (const TuneConfig& config : solver.configs(p))
    EXPECT_EQ(solver.workspace_bytes(p, config), 0u) << config.str();
}

}  // namespace
}  // namespace tunecnn
