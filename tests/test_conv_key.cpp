// parse_conv_key is the inverse of ConvProblem::key(): `autotune explain` and the cache tools
// rebuild problems from the keys written to YAML, so every key must round-trip exactly.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "models/conv_layers.h"
#include "ops/conv/problem.h"

namespace tunecnn {
namespace {

void expect_round_trip(const ConvProblem& problem) {
  const std::string key = problem.key();
  const ConvProblem parsed = parse_conv_key(key);
  EXPECT_EQ(parsed, problem) << key;
  EXPECT_EQ(parsed.key(), key);
}

TEST(ConvKey, EveryShapesFileLayerRoundTripsInEveryDirectionAndDtype) {
  int checked = 0;
  for (const ConvLayer& layer : all_conv_layers())
    for (Direction dir : {Direction::fwd, Direction::bwd_data, Direction::bwd_weights})
      for (DType dt : {DType::f32, DType::f64}) {
        ConvProblem problem = layer.problem.with_dir(dir);
        problem.dt = dt;
        expect_round_trip(problem);
        ++checked;
      }
  EXPECT_GT(checked, 60);
}

TEST(ConvKey, OddGeometriesRoundTrip) {
  // Non-square kernels, strides and padding, grouped and depthwise, large and batch-1 sizes.
  ConvProblem p;
  p.mb = 1, p.ic = 6, p.ih = 7, p.iw = 13, p.oc = 9, p.kh = 2, p.kw = 5;
  p.sh = 3, p.sw = 2, p.ph = 0, p.pw = 2, p.g = 3;
  for (Direction dir : {Direction::fwd, Direction::bwd_data, Direction::bwd_weights}) {
    expect_round_trip(p.with_dir(dir));
    ConvProblem depthwise = p.with_dir(dir);
    depthwise.ic = depthwise.oc = depthwise.g = 512;
    depthwise.dt = DType::f64;
    expect_round_trip(depthwise);
  }
  ConvProblem big;
  big.mb = 256, big.ic = 2048, big.ih = 1000, big.iw = 1000, big.oc = 4096, big.kh = big.kw = 11;
  expect_round_trip(big);
}

TEST(ConvKey, ToleratesFieldOrderSpacingAndAnExplicitF32) {
  const ConvProblem p =
      parse_conv_key("conv fwd mb64 ic32 ih112 iw112 oc32 kh3 kw3 sh1 sw1 ph1 pw1 g32");
  const ConvProblem shuffled =
      parse_conv_key("  conv   fwd g32 pw1 ph1 sw1 sh1 kw3 kh3 oc32 iw112 ih112 ic32 mb64 f32 ");
  EXPECT_EQ(shuffled, p);
  EXPECT_EQ(p.mb, 64);
  EXPECT_EQ(p.g, 32);
  EXPECT_EQ(p.dt, DType::f32);
}

// The message names the text and what is wrong with it.
void expect_rejected(const std::string& key, const std::string& complaint) {
  try {
    parse_conv_key(key);
    ADD_FAILURE() << "accepted '" << key << "'";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("'" + key + "'"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find(complaint), std::string::npos) << e.message();
  }
}

TEST(ConvKey, RejectsMalformedKeysNamingTheTextAndTheProblem) {
  const std::string rest = " ic1 ih8 iw8 oc1 kh3 kw3 sh1 sw1 ph0 pw0 g1";
  expect_rejected("", "must start with 'conv DIR'");
  expect_rejected("pool fwd mb1" + rest, "must start with 'conv DIR'");
  expect_rejected("conv sideways mb1" + rest, "unknown direction 'sideways'");
  expect_rejected("conv fwd" + rest, "field 'mb' is missing");
  expect_rejected("conv fwd mb1 mb2" + rest, "field 'mb' appears twice");
  expect_rejected("conv fwd mb" + rest, "'mb' needs a non-negative whole number");
  expect_rejected("conv fwd mb1x" + rest, "'mb1x' needs a non-negative whole number");
  expect_rejected("conv fwd mb-1" + rest, "'mb-1' needs a non-negative whole number");
  expect_rejected("conv fwd mb99999999999" + rest, "fits in an int");
  expect_rejected("conv fwd mb1 zz4" + rest, "unknown field 'zz4'");
  expect_rejected("conv fwd mb1" + rest + " f16", "unknown field 'f16'");
  expect_rejected("conv fwd mb1" + rest + " f64 f64", "'f64' appears twice");
  expect_rejected("conv fwd mb0" + rest, "non-positive size");
  expect_rejected("conv fwd mb1 ic3 ih8 iw8 oc4 kh3 kw3 sh1 sw1 ph0 pw0 g2", "groups must divide");
}

}  // namespace
}  // namespace tunecnn
