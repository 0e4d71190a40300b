// pointwise_gemm beyond the solver suite (whose shapes are too small to split the weight
// gradient): a batch large enough for one weight-gradient slice per thread, at 1, 2 and 3
// threads, against the reference in both layouts, with the workspace the solver asks for.
#include <gtest/gtest.h>

#include "core/threading.h"
#include "ops/conv/registry.h"
#include "tests/support/conv_testing.h"

namespace tunecnn {
namespace {

using testing::close_relative;
using testing::kAllDirections;
using testing::make_conv_args;
using testing::run_in_layout;

const ConvSolver& pointwise() {
  const ConvSolver* s = find_conv_solver("pointwise_gemm");
  EXPECT_NE(s, nullptr);
  return *s;
}

TEST(PointwiseGemm, SlicedWeightGradientMatchesTheReferenceOnAnyThreadCount) {
  // 4 x 24 x 30 = 2880 pixels: up to two slices of 1024 or more, and a short last one at 3 threads.
  const ConvProblem fwd{Direction::fwd, 4, 12, 24, 30, 20, 1, 1, 1, 1, 0, 0, 1};
  for (Direction dir : kAllDirections) {
    const ConvProblem p = fwd.with_dir(dir);
    const ConvArgs args = make_conv_args(p, 5);
    const Tensor want = run_in_layout({&direct_conv_solver(), {}}, p, args, Layout::NCHW);
    for (int threads : {1, 2, 3}) {
      set_num_threads(threads);
      for (Layout layout : {Layout::NHWC, Layout::CHWN})
        EXPECT_TRUE(close_relative(run_in_layout({&pointwise(), {}, layout}, p, args, layout), want, 1e-5))
            << threads << " threads, " << to_string(layout) << " " << p.key();
      if (dir == Direction::bwd_weights)
        EXPECT_EQ(pointwise().workspace_bytes(p, {}), (std::min(threads, 2) - 1) * 20u * 12u * sizeof(float));
      else
        EXPECT_EQ(pointwise().workspace_bytes(p, {}), 0u);
    }
    set_num_threads(0);
  }
}

TEST(PointwiseGemm, TakesOnlyUnpaddedStrideOneOneByOneDenseConvs) {
  const ConvProblem ok{Direction::fwd, 2, 8, 5, 5, 4, 1, 1, 1, 1, 0, 0, 1};
  EXPECT_TRUE(pointwise().applicable(ok, nullptr));
  std::string why;
  ConvProblem p = ok;
  p.kh = p.kw = 3;
  EXPECT_FALSE(pointwise().applicable(p, &why));
  EXPECT_NE(why.find("1x1"), std::string::npos) << why;
  p = ok;
  p.sh = p.sw = 2;
  EXPECT_FALSE(pointwise().applicable(p, &why));
  p = ok;
  p.ph = p.pw = 1;
  EXPECT_FALSE(pointwise().applicable(p, &why));
  p = ok;
  p.g = 4;
  EXPECT_FALSE(pointwise().applicable(p, &why));
  EXPECT_EQ(pointwise().layouts(ok), (std::vector<Layout>{Layout::NHWC, Layout::CHWN}));
}

}  // namespace
}  // namespace tunecnn
