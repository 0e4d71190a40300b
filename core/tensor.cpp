#include "core/tensor.h"

#include <algorithm>
#include <cstring>

#include "core/cuda_runtime.h"
#include "core/device.h"
#include "core/tensor_math.h"

namespace tunecnn {

Tensor Tensor::empty(Shape shape, DType dtype, Device device, Layout layout) {
  for (std::int64_t d : shape)
    TUNECNN_CHECK(d >= 0, "negative dimension in tensor shape ", shape_str(shape));
  Tensor t;
  t.numel_ = shape_numel(shape);
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  t.layout_ = t.shape_.size() == 4 ? layout : Layout::NCHW;
  t.storage_ = std::make_shared<Storage>(t.nbytes(), device);
  return t;
}

Tensor Tensor::zeros(Shape shape, DType dtype, Device device, Layout layout) {
  Tensor t = empty(std::move(shape), dtype, device, layout);
  if (device == Device::cpu)
    std::memset(t.raw_data(), 0, t.nbytes());
  else
    t.fill(0);
  return t;
}

Tensor Tensor::full(Shape shape, double value, DType dtype) {
  Tensor t = empty(std::move(shape), dtype);
  t.fill(value);
  return t;
}

Tensor Tensor::from_vector(const std::vector<float>& values, Shape shape) {
  Tensor t = empty(std::move(shape), DType::f32);
  TUNECNN_CHECK(static_cast<std::int64_t>(values.size()) == t.numel(), "from_vector: ",
                values.size(), " values for shape ", shape_str(t.shape()));
  std::copy(values.begin(), values.end(), t.data<float>());
  return t;
}

Tensor Tensor::from_vector(const std::vector<double>& values, Shape shape) {
  Tensor t = empty(std::move(shape), DType::f64);
  TUNECNN_CHECK(static_cast<std::int64_t>(values.size()) == t.numel(), "from_vector: ",
                values.size(), " values for shape ", shape_str(t.shape()));
  std::copy(values.begin(), values.end(), t.data<double>());
  return t;
}

Tensor Tensor::empty_like(const Tensor& like) {
  return empty(like.shape_, like.dtype_, like.device(), like.layout_);
}

Tensor Tensor::zeros_like(const Tensor& like) {
  return zeros(like.shape_, like.dtype_, like.device(), like.layout_);
}

std::int64_t Tensor::dim(int i) const {
  const int n = ndim();
  const int index = i < 0 ? i + n : i;
  TUNECNN_CHECK(index >= 0 && index < n, "dimension ", i, " out of range for ", describe());
  return shape_[index];
}

void* Tensor::raw_data() const { return storage_ ? storage_->data() : nullptr; }

void Tensor::check_host_access(DType expected) const {
  TUNECNN_CHECK(defined(), "access to an undefined tensor");
  TUNECNN_CHECK(dtype_ == expected, "tensor ", describe(), " accessed as ", to_string(expected));
  TUNECNN_CHECK(device() == Device::cpu, "host access to a ", to_string(device()), " tensor ",
                describe(), "; copy it with to(Device::cpu) first");
}

Tensor Tensor::reshape(Shape shape) const {
  TUNECNN_CHECK(shape_numel(shape) == numel_, "cannot reshape ", describe(), " to ",
                shape_str(shape));
  TUNECNN_CHECK(ndim() != 4 || layout_ == Layout::NCHW, "reshape of ", describe(),
                " needs NCHW memory order; transform the layout first");
  Tensor t = *this;
  t.shape_ = std::move(shape);
  t.layout_ = Layout::NCHW;
  return t;
}

Tensor Tensor::with_layout(Layout layout) const {
  Tensor t = *this;
  if (ndim() == 4) t.layout_ = layout;
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = empty(shape_, dtype_, device(), layout_);
  t.copy_from(*this);
  return t;
}

Tensor Tensor::to(Device device) const {
  if (device == this->device()) return *this;
  Tensor t = empty(shape_, dtype_, device, layout_);
  t.copy_from(*this);
  return t;
}

void Tensor::move_to(Device device) const {
  TUNECNN_CHECK(defined(), "move_to(", to_string(device), "): undefined tensor");
  storage_->move_to(device);
}

void Tensor::copy_from(const Tensor& src) {
  TUNECNN_CHECK(src.numel_ == numel_ && src.dtype_ == dtype_, "copy_from: ", src.describe(),
                " into ", describe());
  copy_bytes(raw_data(), device(), src.raw_data(), src.device(), nbytes());
}

void Tensor::fill(double value) {
  TUNECNN_ON_CUDA(*this, cuda::fill(*this, value));
  dispatch_dtype(dtype_, [&]<class T>() {
    T* p = data<T>();
    std::fill(p, p + numel_, static_cast<T>(value));
  });
}

std::string Tensor::describe() const {
  if (!defined()) return "undefined tensor";
  std::string out(to_string(dtype_));
  out += shape_str(shape_);
  if (ndim() == 4) out += " " + std::string(to_string(layout_));
  return out + " " + std::string(to_string(device()));
}

}  // namespace tunecnn
