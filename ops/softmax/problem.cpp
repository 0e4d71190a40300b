#include "ops/softmax/problem.h"

#include <algorithm>
#include <span>

#include "ops/problem_key.h"

namespace tunecnn {

std::string SoftmaxProblem::key() const {
  std::string k = "softmax_xent mb" + std::to_string(rows) + " classes" + std::to_string(classes);
  if (dt != DType::f32) k += " " + std::string(to_string(dt));
  return k;
}

void SoftmaxProblem::validate() const {
  TUNECNN_CHECK(rows > 0, "softmax problem needs at least one row: ", key());
  TUNECNN_CHECK(classes > 0, "softmax problem needs at least one class: ", key());
}

SoftmaxProblem parse_softmax_key(std::string_view key) {
  const std::vector<std::string_view> words = split_key_words(key);
  TUNECNN_CHECK(!words.empty() && words[0] == "softmax_xent", "bad softmax key '", key,
                "': it must start with 'softmax_xent', e.g. '", SoftmaxProblem{}.key(), "'");
  SoftmaxProblem p;
  const KeyField fields[] = {{"mb", &p.rows}, {"classes", &p.classes}};
  const std::string_view flags[] = {"f32", "f64"};
  p.dt = key_dtype("softmax", key, parse_key_fields("softmax", key, std::span(words).subspan(1), fields, flags));
  try {
    p.validate();
  } catch (const Error& e) {
    TUNECNN_FAIL("bad softmax key '", key, "': ", e.message());
  }
  return p;
}

SoftmaxProblem softmax_problem_of(const Tensor& logits) {
  TUNECNN_CHECK(logits.ndim() == 2 && logits.dim(1) > 0,
                "softmax expects logits [batch, classes], got ", shape_str(logits.shape()));
  TUNECNN_CHECK(logits.dim(0) <= INT32_MAX && logits.dim(1) <= INT32_MAX,
                "softmax logits too large: ", shape_str(logits.shape()));
  return {static_cast<int>(logits.dim(0)), static_cast<int>(logits.dim(1)), logits.dtype(),
          logits.device()};
}

void check_softmax_call(const SoftmaxProblem& problem, const Tensor& logits,
                        const std::vector<std::int32_t>& labels, const Tensor& grad) {
  problem.validate();
  TUNECNN_CHECK(logits.shape() == problem.logits_shape() && logits.dtype() == problem.dt &&
                    logits.device() == problem.device,
                "softmax logits ", logits.describe(), " do not match ", problem.key(), " on ",
                to_string(problem.device));
  TUNECNN_CHECK(grad.shape() == logits.shape() && grad.dtype() == logits.dtype() &&
                    grad.device() == logits.device(),
                "softmax_cross_entropy gradient ", grad.describe(), " does not match logits ",
                logits.describe());
  TUNECNN_CHECK(static_cast<std::int64_t>(labels.size()) == problem.rows, labels.size(),
                " labels for logits ", shape_str(logits.shape()));
  for (std::size_t row = 0; row < labels.size(); ++row)
    TUNECNN_CHECK(labels[row] >= 0 && labels[row] < problem.classes, "label ", labels[row],
                  " in row ", row, " is outside [0, ", problem.classes, ")");
}

std::int64_t softmax_row_grain(int classes) {
  return std::max<std::int64_t>(1, 4096 / std::max(classes, 1));
}

double mean_row_loss(const std::vector<double>& row_loss) {
  double total = 0;
  for (double loss : row_loss) total += loss;
  return row_loss.empty() ? 0.0 : total / static_cast<double>(row_loss.size());
}

bool softmax_problem_well_formed(const SoftmaxProblem& problem, std::string* why) {
  if (problem.rows > 0 && problem.classes > 0) return true;
  if (why) *why = "needs at least one row and one class";
  return false;
}

}  // namespace tunecnn
