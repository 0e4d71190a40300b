#pragma once
// Scoring a classifier's logits against labels: the counts `train` reports per epoch and
// `evaluate` reports per class.
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace tunecnn {

// Rows of `logits` ([B, classes], any device) whose highest score is the label.
std::int64_t count_correct(const Tensor& logits, const std::vector<std::int32_t>& labels);
// Rows whose label is among the k highest logits: fewer than k classes score strictly higher (a
// tie with the label counts in its favour, as ImageNet's top-5 is usually scored).
std::int64_t count_in_top_k(const Tensor& logits, const std::vector<std::int32_t>& labels, int k);

// Sums over an evaluation: loss, top-1, top-5 and each class's examples and correct ones.
class ClassificationMetrics {
 public:
  explicit ClassificationMetrics(int classes);
  // One batch: its mean loss and logits ([B, classes], any device).
  void add(double mean_loss, const Tensor& logits, const std::vector<std::int32_t>& labels);

  std::int64_t examples() const { return examples_; }
  double loss() const { return examples_ ? loss_sum_ / examples_ : 0; }
  double top1() const { return examples_ ? double(top1_) / examples_ : 0; }
  double top5() const { return examples_ ? double(top5_) / examples_ : 0; }
  std::int64_t class_examples(int c) const { return per_class_total_.at(c); }
  // Correct over examples of class c; 0 when it had none.
  double class_accuracy(int c) const;
  int classes() const { return static_cast<int>(per_class_total_.size()); }

 private:
  double loss_sum_ = 0;
  std::int64_t examples_ = 0, top1_ = 0, top5_ = 0;
  std::vector<std::int64_t> per_class_total_, per_class_correct_;
};

}  // namespace tunecnn
