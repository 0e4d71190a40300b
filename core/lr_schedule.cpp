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

std::unique_ptr<LrSchedule> make_lr_schedule(const std::string& name, double lr, double total_epochs,
                                             double step_epochs, double gamma) {
  if (name == "const") return std::make_unique<ConstantLr>(lr);
  if (name == "step") return std::make_unique<StepLr>(lr, step_epochs, gamma);
  if (name == "cosine") return std::make_unique<CosineLr>(lr, total_epochs);
  TUNECNN_FAIL("unknown learning-rate schedule '", name, "' (expected const, step or cosine)");
}

}  // namespace tunecnn
