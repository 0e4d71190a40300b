#include "core/gradient_allreduce.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/error.h"

namespace tunecnn {

GradientAllreduce::GradientAllreduce(std::vector<NamedVariable> parameters,
                                     std::shared_ptr<Communicator> comm, std::size_t bucket_bytes)
    : parameters_(std::move(parameters)), comm_(std::move(comm)) {
  TUNECNN_CHECK(comm_ != nullptr, "GradientAllreduce needs a communicator");
  bucket_of_.resize(parameters_.size());
  slot_of_.resize(parameters_.size());
  ready_.resize(parameters_.size());
  // Backward finishes the last layers first: fill buckets from the end of the registration order.
  std::size_t bucket_floats = 0;
  for (std::size_t i = parameters_.size(); i-- > 0;) {
    const Variable& p = parameters_[i].second;
    TUNECNN_CHECK(p.data().dtype() == DType::f32, "data-parallel training needs f32 parameters; ",
                  parameters_[i].first, " is ", p.data().describe());
    const auto floats = static_cast<std::size_t>(p.data().numel());
    if (buckets_.empty() || (bucket_floats > 0 && (bucket_floats + floats) * sizeof(float) > bucket_bytes)) {
      buckets_.emplace_back();
      bucket_floats = 0;
    }
    Bucket& bucket = buckets_.back();
    slot_of_[i] = bucket.parameters.size();
    bucket.parameters.push_back(i);
    bucket.offsets.push_back(bucket_floats);
    bucket_floats += floats;
    bucket.buffer.resize(bucket_floats);
    bucket_of_[i] = buckets_.size() - 1;
    index_of_[p.id()] = i;
  }
  stats_.buckets = buckets_.size();
  for (const Bucket& b : buckets_) stats_.bytes_per_step += b.buffer.size() * sizeof(float);
}

void GradientAllreduce::begin_step(std::int64_t local_examples, std::int64_t global_examples) {
  TUNECNN_CHECK(global_examples > 0 && local_examples >= 0 && local_examples <= global_examples,
                "GradientAllreduce: ", local_examples, " of ", global_examples, " examples");
  scale_ = static_cast<float>(static_cast<double>(local_examples) / static_cast<double>(global_examples));
  std::fill(ready_.begin(), ready_.end(), false);
  for (Bucket& b : buckets_) b.ready = 0;
  next_to_start_ = 0;
}

void GradientAllreduce::on_gradient_ready(const Variable& parameter) {
  const auto found = index_of_.find(parameter.id());
  if (found == index_of_.end() || ready_[found->second]) return;  // not one of ours
  copy_in(found->second);
  start_ready_buckets();
  comm_->progress();
}

void GradientAllreduce::finish() {
  for (std::size_t i = 0; i < parameters_.size(); ++i)
    if (!ready_[i]) copy_in(i);  // unused this step, or this rank had no examples: zeros
  start_ready_buckets();
  const auto start = std::chrono::steady_clock::now();
  comm_->wait_all("gradient allreduce");
  stats_.wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const Bucket& b : buckets_) copy_out(b);
  ++stats_.steps;
}

void GradientAllreduce::backward(Variable& loss, std::int64_t local_examples,
                                 std::int64_t global_examples) {
  begin_step(local_examples, global_examples);
  if (local_examples > 0) loss.backward([this](const Variable& p) { on_gradient_ready(p); });
  finish();
}

std::vector<std::vector<std::string>> GradientAllreduce::bucket_layout() const {
  std::vector<std::vector<std::string>> names;
  for (const Bucket& b : buckets_) {
    names.emplace_back();
    for (std::size_t i : b.parameters) names.back().push_back(parameters_[i].first);
  }
  return names;
}

// This rank's share of the global mean: its local-mean gradient times local/global examples.
void GradientAllreduce::copy_in(std::size_t parameter) {
  Bucket& bucket = buckets_[bucket_of_[parameter]];
  float* out = bucket.buffer.data() + bucket.offsets[slot_of_[parameter]];
  const Variable& p = parameters_[parameter].second;
  const auto n = static_cast<std::size_t>(p.data().numel());
  if (p.has_grad() && scale_ != 0) {
    const float* g = p.grad().data<float>();
    for (std::size_t k = 0; k < n; ++k) out[k] = scale_ * g[k];
  } else {
    std::fill(out, out + n, 0.0f);
  }
  ready_[parameter] = true;
  ++bucket.ready;
}

void GradientAllreduce::start_ready_buckets() {
  while (next_to_start_ < buckets_.size() &&
         buckets_[next_to_start_].ready == buckets_[next_to_start_].parameters.size()) {
    Bucket& b = buckets_[next_to_start_++];
    comm_->start_allreduce_sum(b.buffer.data(), b.buffer.size());
  }
}

// A fresh gradient tensor rather than writing into the old one: add_grad may have adopted a tensor
// that something else still shares.
void GradientAllreduce::copy_out(const Bucket& bucket) {
  for (std::size_t slot = 0; slot < bucket.parameters.size(); ++slot) {
    Variable p = parameters_[bucket.parameters[slot]].second;
    Tensor grad = Tensor::empty(p.data().shape());
    std::memcpy(grad.data<float>(), bucket.buffer.data() + bucket.offsets[slot], grad.nbytes());
    p.zero_grad();
    p.add_grad(std::move(grad));
  }
}

}  // namespace tunecnn
