#include "apps/training/classification_metrics.h"

#include <algorithm>

#include "core/error.h"
#include "ops/softmax_cross_entropy.h"

namespace tunecnn {

std::int64_t count_correct(const Tensor& logits, const std::vector<std::int32_t>& labels) {
  const std::vector<std::int32_t> predicted = argmax_rows(logits.to(Device::cpu));
  std::int64_t correct = 0;
  for (std::size_t i = 0; i < labels.size(); ++i) correct += predicted[i] == labels[i];
  return correct;
}

std::int64_t count_in_top_k(const Tensor& device_logits, const std::vector<std::int32_t>& labels, int k) {
  const Tensor logits = device_logits.to(Device::cpu);
  const std::int64_t classes = logits.shape()[1];
  const float* rows = logits.data<float>();
  std::int64_t correct = 0;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const float* row = rows + static_cast<std::int64_t>(i) * classes;
    const float label_score = row[labels[i]];
    const auto higher = std::count_if(row, row + classes, [&](float s) { return s > label_score; });
    correct += higher < k;
  }
  return correct;
}

ClassificationMetrics::ClassificationMetrics(int classes)
    : per_class_total_(static_cast<std::size_t>(classes)), per_class_correct_(static_cast<std::size_t>(classes)) {}

void ClassificationMetrics::add(double mean_loss, const Tensor& device_logits, const std::vector<std::int32_t>& labels) {
  const Tensor logits = device_logits.to(Device::cpu);
  TUNECNN_CHECK(logits.shape().size() == 2 && logits.shape()[1] == classes(), "logits ", shape_str(logits.shape()),
                " for ", classes(), " classes");
  const std::vector<std::int32_t> predicted = argmax_rows(logits);
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const bool correct = predicted[i] == labels[i];
    ++per_class_total_.at(labels[i]);
    per_class_correct_.at(labels[i]) += correct;
    top1_ += correct;
  }
  const auto n = static_cast<std::int64_t>(labels.size());
  loss_sum_ += mean_loss * static_cast<double>(n);
  examples_ += n;
  top5_ += count_in_top_k(logits, labels, 5);
}

double ClassificationMetrics::class_accuracy(int c) const {
  const std::int64_t total = per_class_total_.at(c);
  return total ? double(per_class_correct_.at(c)) / total : 0;
}

}  // namespace tunecnn
