// Learning-rate schedules: the rate at given points of training, for each schedule and with a
// warmup in front, and the errors for bad settings.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "core/error.h"
#include "core/lr_schedule.h"

namespace tunecnn {
namespace {

TEST(LrSchedule, ConstantStepAndCosineFollowTheirFormulas) {
  auto constant = make_lr_schedule("const", 0.1, 10, 1, 0.1);
  EXPECT_DOUBLE_EQ(constant->lr_at(0), 0.1);
  EXPECT_DOUBLE_EQ(constant->lr_at(9.5), 0.1);

  auto step = make_lr_schedule("step", 0.1, 10, 3, 0.5);
  EXPECT_DOUBLE_EQ(step->lr_at(2.99), 0.1);
  EXPECT_DOUBLE_EQ(step->lr_at(3.0), 0.05);
  EXPECT_DOUBLE_EQ(step->lr_at(6.5), 0.025);

  auto cosine = make_lr_schedule("cosine", 0.1, 10, 1, 0.1);
  EXPECT_DOUBLE_EQ(cosine->lr_at(0), 0.1);
  EXPECT_NEAR(cosine->lr_at(5), 0.05, 1e-12);
  EXPECT_NEAR(cosine->lr_at(2.5), 0.05 * (1 + std::cos(std::numbers::pi / 4)), 1e-12);
  EXPECT_NEAR(cosine->lr_at(10), 0.0, 1e-12);
}

TEST(LrSchedule, WarmupRampsLinearlyToTheScheduleThenFollowsIt) {
  auto plain = make_lr_schedule("cosine", 0.2, 30, 1, 0.1);
  auto warm = make_lr_schedule("cosine", 0.2, 30, 1, 0.1, 2.0);
  EXPECT_NEAR(warm->lr_at(0), 0.02 * plain->lr_at(0), 1e-12);  // starts small, not at 0
  EXPECT_NEAR(warm->lr_at(1), (0.02 + 0.98 * 0.5) * plain->lr_at(1), 1e-12);
  for (double progress : {0.1, 0.5, 1.0, 1.5, 1.99})
    EXPECT_LT(warm->lr_at(progress), warm->lr_at(progress + 0.01)) << progress;
  for (double progress : {2.0, 5.0, 29.0}) EXPECT_DOUBLE_EQ(warm->lr_at(progress), plain->lr_at(progress));
  EXPECT_NE(warm->describe().find("linear warmup over 2"), std::string::npos) << warm->describe();
}

TEST(LrSchedule, BadNamesAndLengthsAreErrors) {
  EXPECT_THROW(make_lr_schedule("linear", 0.1, 10, 1, 0.1), Error);
  EXPECT_THROW(make_lr_schedule("step", 0.1, 10, 0, 0.1), Error);
  EXPECT_THROW(make_lr_schedule("cosine", 0.1, 0, 1, 0.1), Error);
  EXPECT_NO_THROW(make_lr_schedule("cosine", 0.1, 10, 1, 0.1, 0));  // no warmup
  EXPECT_THROW(WarmupLr(make_lr_schedule("const", 0.1, 10, 1, 0.1), -1), Error);
}

}  // namespace
}  // namespace tunecnn
