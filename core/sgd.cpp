#include "core/sgd.h"

#include <map>

#include "core/allocator.h"
#include "core/device.h"
#include "core/tensor_math.h"

namespace tunecnn {
namespace {

template <class T>
void apply_update(T* p, const T* g, T* v, std::int64_t n, const SgdOptions& o, bool first_step) {
  const T lr = static_cast<T>(o.lr), mu = static_cast<T>(o.momentum),
          wd = static_cast<T>(o.weight_decay);
  for (std::int64_t i = 0; i < n; ++i) {
    T d = g[i] + wd * p[i];
    if (v != nullptr) {
      v[i] = first_step ? d : mu * v[i] + d;
      d = o.nesterov ? d + mu * v[i] : v[i];
    }
    p[i] -= lr * d;
  }
}

// Without CUDA the macro only refuses the GPU tensor, leaving the other arguments unused.
void update_on_cuda(Tensor& p, [[maybe_unused]] const Tensor& g, [[maybe_unused]] Tensor& v,
                    [[maybe_unused]] const SgdOptions& o, [[maybe_unused]] bool first_step) {
  TUNECNN_ON_CUDA(p, cuda::sgd_update(p, g, v, o, first_step));
}

void update_range_on_cuda(Tensor& p, [[maybe_unused]] std::int64_t offset, [[maybe_unused]] const Tensor& g,
                          [[maybe_unused]] Tensor& v, [[maybe_unused]] const SgdOptions& o,
                          [[maybe_unused]] bool first_step) {
  TUNECNN_ON_CUDA(p, cuda::sgd_update_range(p, offset, g, v, o, first_step));
}

}  // namespace

Sgd::Sgd(std::vector<NamedVariable> parameters, SgdOptions options)
    : parameters_(std::move(parameters)), velocity_(parameters_.size()), options_(options) {
  TUNECNN_CHECK(options_.lr >= 0 && options_.momentum >= 0 && options_.weight_decay >= 0,
                "SGD options must be non-negative (lr ", options_.lr, ", momentum ",
                options_.momentum, ", weight decay ", options_.weight_decay, ")");
  TUNECNN_CHECK(!options_.nesterov || options_.momentum > 0, "Nesterov SGD needs momentum > 0");
  for (std::size_t i = 0; i < parameters_.size(); ++i) index_of_.emplace(parameters_[i].second.id(), i);
}

void Sgd::step() {
  for (std::size_t i = 0; i < parameters_.size(); ++i) update(i);
}

void Sgd::step_parameter(const Variable& parameter) {
  const auto it = index_of_.find(parameter.id());
  if (it == index_of_.end()) return;
  first_step_in_rows_.erase(it->second);
  update(it->second);
  parameters_[it->second].second.zero_grad();
}

void Sgd::step_rows(const Variable& parameter, std::int64_t first_row, const Tensor& rows) {
  const auto it = index_of_.find(parameter.id());
  if (it == index_of_.end()) return;
  const std::size_t i = it->second;
  Tensor& p = parameters_[i].second.data();
  TUNECNN_CHECK(rows.device() == p.device() && rows.dtype() == p.dtype() && !p.shape().empty() &&
                    first_row >= 0 && first_row + rows.dim(0) <= p.dim(0) &&
                    rows.numel() == rows.dim(0) * (p.numel() / p.dim(0)),
                "Sgd::step_rows: rows ", rows.describe(), " at ", first_row, " do not fit ", p.describe());
  if (options_.momentum > 0 && !velocity_[i].defined()) {
    const MemoryUseScope counted_as(MemoryUse::optimizer_state);
    velocity_[i] = Tensor::empty_like(p);
    first_step_in_rows_.insert(i);
  }
  const std::int64_t offset = first_row * (p.numel() / p.dim(0));
  if (p.device() == Device::cuda)
    return update_range_on_cuda(p, offset, rows, velocity_[i], options_, first_step_in_rows_.count(i) > 0);
  dispatch_dtype(p.dtype(), [&]<class T>() {
    T* v = options_.momentum > 0 ? velocity_[i].data<T>() + offset : nullptr;
    apply_update<T>(p.data<T>() + offset, rows.data<T>(), v, rows.numel(), options_, first_step_in_rows_.count(i) > 0);
  });
}

void Sgd::backward_and_step(Variable& loss) {
  loss.backward([this](const Variable& parameter) { step_parameter(parameter); },
                [this](const Variable& parameter, std::int64_t first_row, const Tensor& rows) {
                  step_rows(parameter, first_row, rows);
                });
}

void Sgd::update(std::size_t i) {
  Variable& param = parameters_[i].second;
  if (!param.has_grad()) return;
  Tensor& p = param.data();
  const bool first_step = !velocity_[i].defined();
  if (options_.momentum > 0 && first_step) {
    const MemoryUseScope counted_as(MemoryUse::optimizer_state);
    velocity_[i] = Tensor::empty_like(p);
  }
  check_same_device("sgd", p, param.grad());
  if (p.device() == Device::cuda) {
    update_on_cuda(p, param.grad(), velocity_[i], options_, first_step);
    return;
  }
  dispatch_dtype(p.dtype(), [&]<class T>() {
    T* v = options_.momentum > 0 ? velocity_[i].data<T>() : nullptr;
    apply_update<T>(p.data<T>(), param.grad().data<T>(), v, p.numel(), options_, first_step);
  });
}

void Sgd::zero_grad() {
  for (auto& [name, param] : parameters_) param.zero_grad();
}

std::vector<NamedTensor> Sgd::state() const {
  std::vector<NamedTensor> out;
  for (std::size_t i = 0; i < parameters_.size(); ++i)
    if (velocity_[i].defined()) out.emplace_back(parameters_[i].first, velocity_[i]);
  return out;
}

void Sgd::load_state(const std::vector<NamedTensor>& state) {
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < parameters_.size(); ++i) index[parameters_[i].first] = i;
  for (const auto& [name, tensor] : state) {
    auto it = index.find(name);
    TUNECNN_CHECK(it != index.end(), "optimizer state for unknown parameter '", name, "'");
    const Tensor& p = parameters_[it->second].second.data();
    TUNECNN_CHECK(tensor.shape() == p.shape() && tensor.dtype() == p.dtype(),
                  "optimizer state for '", name, "' is ", tensor.describe(), ", parameter is ",
                  p.describe());
    const MemoryUseScope counted_as(MemoryUse::optimizer_state);
    velocity_[it->second] = Tensor::empty_like(p);  // on the parameter's device
    velocity_[it->second].copy_from(tensor);
  }
}

}  // namespace tunecnn
