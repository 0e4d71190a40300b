// Pool and softmax keys read back: every key the problems write parses to the same problem, and
// malformed keys are refused with a message that names the text and the problem.
#include <gtest/gtest.h>

#include "core/error.h"
#include "ops/pool/problem.h"
#include "ops/softmax/problem.h"

namespace tunecnn {
namespace {

void expect_rejected(const std::function<void()>& parse, const std::string& complaint) {
  try {
    parse();
    ADD_FAILURE() << "accepted; expected: " << complaint;
  } catch (const Error& e) {
    EXPECT_NE(e.message().find(complaint), std::string::npos) << e.message();
  }
}

TEST(PoolKey, RoundTripsEveryField) {
  PoolProblem p;
  p.kind = PoolKind::avg, p.dir = Direction::bwd_data, p.mb = 3, p.c = 5, p.ih = 13, p.iw = 11;
  p.kh = 3, p.kw = 2, p.sh = 2, p.sw = 1, p.ph = 1, p.pw = 0, p.dt = DType::f64;
  p.count_include_pad = true;
  EXPECT_EQ(parse_pool_key(p.key()), p);
  PoolProblem max;
  max.mb = 64, max.c = 16, max.ih = max.iw = 28, max.kh = max.kw = max.sh = max.sw = 2;
  EXPECT_EQ(parse_pool_key(max.key()), max);
  EXPECT_EQ(parse_pool_key("  pool max fwd pw0 ph0 sw2 sh2 kw2 kh2 iw28 ih28 c16 mb64 "), max);
}

TEST(PoolKey, RejectsMalformedKeys) {
  const std::string rest = " mb1 c1 ih4 iw4 kh2 kw2 sh2 sw2 ph0 pw0";
  expect_rejected([&] { parse_pool_key("conv fwd" + rest); }, "must start with 'pool max|avg DIR'");
  expect_rejected([&] { parse_pool_key("pool min fwd" + rest); }, "must start with");
  expect_rejected([&] { parse_pool_key("pool max sideways" + rest); }, "unknown direction 'sideways'");
  expect_rejected([&] { parse_pool_key("pool max fwd mb1 c1 ih4 iw4 kh2 kw2 sh2 sw2 ph0"); },
                  "field 'pw' is missing");
  expect_rejected([&] { parse_pool_key("pool max fwd" + rest + " incpad"); }, "average pooling only");
  expect_rejected([&] { parse_pool_key("pool max bwd_weights" + rest); }, "no weights");
  expect_rejected([&] { parse_pool_key("pool max fwd" + rest + " mb2"); }, "'mb' appears twice");
  expect_rejected([&] { parse_pool_key("pool max fwd" + rest + " q7"); }, "unknown field 'q7'");
}

TEST(SoftmaxKey, RoundTripsAndRejects) {
  const SoftmaxProblem p{32, 10000, DType::f64};
  EXPECT_EQ(parse_softmax_key(p.key()), p);
  EXPECT_EQ(parse_softmax_key("softmax_xent classes10 mb64"), (SoftmaxProblem{64, 10, DType::f32}));
  expect_rejected([] { parse_softmax_key("softmax mb1 classes2"); }, "must start with 'softmax_xent'");
  expect_rejected([] { parse_softmax_key("softmax_xent mb1"); }, "field 'classes' is missing");
  expect_rejected([] { parse_softmax_key("softmax_xent mb0 classes2"); }, "at least one row");
  expect_rejected([] { parse_softmax_key("softmax_xent mb1 classes-2"); }, "non-negative whole number");
}

}  // namespace
}  // namespace tunecnn
