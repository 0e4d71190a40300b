// oneDNN's solvers beyond the solver suite (tests/test_conv_solvers.cpp, which checks each of
// their configs against the direct reference in every direction): their configs are exactly
// oneDNN's implementations, they give the same bits run to run as deterministic() claims, a
// primitive is built once, and what they cannot run is refused with a reason.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string_view>

#include "ops/conv/onednn.h"
#include "ops/conv/onednn_primitive.h"
#include "ops/conv/registry.h"
#include "tests/support/conv_testing.h"

namespace tunecnn {
namespace {

using namespace tunecnn::testing;

const ConvSolver& onednn_solver(Layout layout) {
  const ConvSolver* solver = find_conv_solver(layout == Layout::NHWC ? "onednn_nhwc" : "onednn_nchw");
  EXPECT_NE(solver, nullptr);
  return *solver;
}

bool capped_at_avx2() {
  const char* isa = std::getenv("ONEDNN_MAX_CPU_ISA");
  return isa != nullptr && std::string_view(isa) == "AVX2";
}

const ConvProblem kLayer{Direction::fwd, 2, 16, 9, 9, 32, 3, 3, 1, 1, 1, 1, 1};

TEST(OneDnnSolver, ConfigsAreOneDnnsImplementationsWithoutItsReferenceCode) {
  for (const Layout layout : {Layout::NCHW, Layout::NHWC}) {
    std::size_t offered = 0;
    for (const bool blocked : {false, true}) {
      for (const bool winograd : {false, true}) {
        const std::vector<std::string> names = onednn_implementations(kLayer, layout, blocked, winograd);
        for (const std::string& name : names) {
          EXPECT_FALSE(name.starts_with("ref")) << name;
          // ctest's OneDnnOnAvx2.ConvSolvers runs this suite as an AVX2-only machine would.
          if (capped_at_avx2()) {
            EXPECT_EQ(name.find("avx512"), std::string::npos) << name;
          }
        }
        offered += names.size();
      }
    }
    // Blocked activations always have a JIT implementation on an AVX2 or AVX-512 machine.
    EXPECT_FALSE(onednn_implementations(kLayer, layout, true, false).empty());
    EXPECT_EQ(onednn_solver(layout).configs(kLayer).size(), offered);
  }
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

TEST(OneDnnSolver, EveryConfigGivesTheSameBitsRunToRunAsDeterministicClaims) {
  for (const Direction dir : kAllDirections) {
    const ConvProblem p = kLayer.with_dir(dir);
    for (const Layout layout : {Layout::NCHW, Layout::NHWC}) {
      const ConvSolver& solver = onednn_solver(layout);
      for (const TuneConfig& config : solver.configs(p)) {
        ASSERT_TRUE(solver.deterministic(p, config));
        const ConvArgs args = make_conv_args(p, 7);
        const Tensor first = run_in_layout({&solver, config}, p, args, layout);
        const Tensor second = run_in_layout({&solver, config}, p, args, layout);
        EXPECT_TRUE(same_bits(first, second)) << config.str() << " " << p.key() << " " << to_string(layout);
      }
    }
  }
}

TEST(OneDnnSolver, APrimitiveIsBuiltOnceAndReusedEveryCall) {
  const ConvSolver& solver = onednn_solver(Layout::NCHW);
  const ConvProblem p = kLayer.with_dir(Direction::bwd_weights);
  const TuneConfig config = solver.configs(p).front();
  const ConvArgs args = make_conv_args(p, 3);
  run_in_layout({&solver, config}, p, args, Layout::NCHW);
  const std::size_t built = onednn_primitives_built();
  for (int i = 0; i < 3; ++i) run_in_layout({&solver, config}, p, args, Layout::NCHW);
  EXPECT_EQ(onednn_primitives_built(), built);
}

// A config names the same implementation before and after oneDNN has cached a primitive of the
// problem (its iterator then lists some implementations twice).
TEST(OneDnnSolver, ConfigsStayTheSameOnceAPrimitiveOfTheProblemIsBuilt) {
  const ConvProblem p{Direction::fwd, 4, 16, 14, 14, 16, 5, 5, 1, 1, 2, 2, 1};
  const ConvSolver& solver = onednn_solver(Layout::NCHW);
  const std::vector<TuneConfig> before = solver.configs(p);
  for (const TuneConfig& config : before) run_in_layout({&solver, config}, p, make_conv_args(p, 5), Layout::NCHW);
  EXPECT_EQ(solver.configs(p), before);
}

TEST(OneDnnSolver, F64IsNotApplicableAndSaysWhy) {
  ConvProblem p = kLayer;
  p.dt = DType::f64;
  std::string why;
  EXPECT_FALSE(onednn_solver(Layout::NCHW).applicable(p, &why));
  EXPECT_NE(why.find("f32"), std::string::npos) << why;
}

TEST(OneDnnSolver, AnImplementationOneDnnDoesNotOfferIsRefusedWithAMessage) {
  const ConvSolver& solver = onednn_solver(Layout::NCHW);
  const TuneConfig unknown{{{"blocked", 0}, {"winograd", 0}, {"impl", 99}}};
  const ConvArgs args = make_conv_args(kLayer, 1);
  try {
    solver.run(kLayer, unknown, args, {});
    FAIL() << "ran an implementation oneDNN does not offer";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no implementation #99"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tunecnn
