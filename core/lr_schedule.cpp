#include "core/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"

namespace tunecnn {

std::string ConstantLr::describe() const { return "constant " + std::to_string(lr_); }

StepLr::StepLr(double lr, double step_epochs, double gamma)
    : lr_(lr), step_epochs_(step_epochs), gamma_(gamma) {
  TUNECNN_CHECK(step_epochs > 0, "step schedule needs a positive step, got ", step_epochs);
}

double StepLr::lr_at(double progress) const {
  return lr_ * std::pow(gamma_, std::floor(progress / step_epochs_));
}

std::string StepLr::describe() const {
  return "step " + std::to_string(lr_) + " x" + std::to_string(gamma_) + " every " +
         std::to_string(step_epochs_) + " epochs";
}

CosineLr::CosineLr(double lr, double total_epochs, double min_lr)
    : lr_(lr), total_epochs_(total_epochs), min_lr_(min_lr) {
  TUNECNN_CHECK(total_epochs > 0, "cosine schedule needs a positive length, got ", total_epochs);
}

double CosineLr::lr_at(double progress) const {
  const double t = std::clamp(progress / total_epochs_, 0.0, 1.0);
  return min_lr_ + 0.5 * (lr_ - min_lr_) * (1.0 + std::cos(std::numbers::pi * t));
}

std::string CosineLr::describe() const {
  return "cosine " + std::to_string(lr_) + " -> " + std::to_string(min_lr_) + " over " +
         std::to_string(total_epochs_) + " epochs";
}

WarmupLr::WarmupLr(std::unique_ptr<LrSchedule> after, double warmup_epochs)
    : after_(std::move(after)), warmup_epochs_(warmup_epochs) {
  TUNECNN_CHECK(warmup_epochs > 0, "warmup needs a positive length in epochs, got ", warmup_epochs);
}

// The ramp starts at 1/50 of the rate, not 0, so the first step already moves the weights.
double WarmupLr::lr_at(double progress) const {
  const double rate = after_->lr_at(progress);
  if (progress >= warmup_epochs_) return rate;
  constexpr double kStart = 0.02;
  return rate * (kStart + (1.0 - kStart) * std::max(progress, 0.0) / warmup_epochs_);
}

std::string WarmupLr::describe() const {
  return after_->describe() + ", linear warmup over " + std::to_string(warmup_epochs_) + " epochs";
}

std::unique_ptr<LrSchedule> make_lr_schedule(const std::string& name, double lr, double total_epochs,
                                             double step_epochs, double gamma, double warmup_epochs) {
  std::unique_ptr<LrSchedule> schedule;
  if (name == "const") schedule = std::make_unique<ConstantLr>(lr);
  else if (name == "step") schedule = std::make_unique<StepLr>(lr, step_epochs, gamma);
  else if (name == "cosine") schedule = std::make_unique<CosineLr>(lr, total_epochs);
  else TUNECNN_FAIL("unknown learning-rate schedule '", name, "' (expected const, step or cosine)");
  if (warmup_epochs <= 0) return schedule;
  return std::make_unique<WarmupLr>(std::move(schedule), warmup_epochs);
}

}  // namespace tunecnn
