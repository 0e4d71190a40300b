#pragma once
// Learning-rate schedules as pure functions of training progress (in epochs, fractional), so a
// resumed run gets exactly the rate an uninterrupted one would.
#include <memory>
#include <string>

namespace tunecnn {

class LrSchedule {
 public:
  virtual ~LrSchedule() = default;
  virtual double lr_at(double epoch_progress) const = 0;
  virtual std::string describe() const = 0;
};

class ConstantLr final : public LrSchedule {
 public:
  explicit ConstantLr(double lr) : lr_(lr) {}
  double lr_at(double) const override { return lr_; }
  std::string describe() const override;

 private:
  double lr_;
};

// lr * gamma^floor(progress / step_epochs)
class StepLr final : public LrSchedule {
 public:
  StepLr(double lr, double step_epochs, double gamma);
  double lr_at(double epoch_progress) const override;
  std::string describe() const override;

 private:
  double lr_, step_epochs_, gamma_;
};

// Cosine annealing from lr to min_lr over total_epochs, per step rather than per epoch.
class CosineLr final : public LrSchedule {
 public:
  CosineLr(double lr, double total_epochs, double min_lr = 0.0);
  double lr_at(double epoch_progress) const override;
  std::string describe() const override;

 private:
  double lr_, total_epochs_, min_lr_;
};

// A linear ramp from a small fraction of the rate up to the wrapped schedule's rate over
// the first warmup_epochs, then the wrapped schedule itself: large rates with momentum blow up
// the first steps of nets without normalisation (the CIFAR net at 0.02 stalls at chance), while
// they train well once the weights have settled (Goyal et al. 2017, "gradual warmup").
class WarmupLr final : public LrSchedule {
 public:
  WarmupLr(std::unique_ptr<LrSchedule> after, double warmup_epochs);
  double lr_at(double epoch_progress) const override;
  std::string describe() const override;

 private:
  std::unique_ptr<LrSchedule> after_;
  double warmup_epochs_;
};

// "const", "step" (step_epochs, gamma) or "cosine"; throws Error on another name.
// With warmup_epochs > 0 it is wrapped in WarmupLr.
std::unique_ptr<LrSchedule> make_lr_schedule(const std::string& name, double lr, double total_epochs,
                                             double step_epochs, double gamma,
                                             double warmup_epochs = 0);

}  // namespace tunecnn
