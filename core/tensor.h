#pragma once
// A dense, contiguous n-D array on one device. Copies share storage (like a shared_ptr); clone()
// copies the bytes. For 4-D tensors shape() is the logical (N, C, H, W) whatever the layout.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/allocator.h"
#include "core/error.h"
#include "core/types.h"

namespace tunecnn {

class Tensor {
 public:
  Tensor() = default;  // undefined: no storage, defined() is false

  static Tensor empty(Shape shape, DType dtype = DType::f32, Device device = Device::cpu,
                      Layout layout = Layout::NCHW);
  static Tensor zeros(Shape shape, DType dtype = DType::f32, Device device = Device::cpu,
                      Layout layout = Layout::NCHW);
  static Tensor full(Shape shape, double value, DType dtype = DType::f32);
  static Tensor from_vector(const std::vector<float>& values, Shape shape);
  static Tensor from_vector(const std::vector<double>& values, Shape shape);
  // Same shape, dtype, device and layout as `like`, uninitialised.
  static Tensor empty_like(const Tensor& like);
  static Tensor zeros_like(const Tensor& like);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  std::int64_t dim(int i) const;  // negative i counts from the back
  int ndim() const { return static_cast<int>(shape_.size()); }
  std::int64_t numel() const { return numel_; }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel_) * dtype_size(dtype_); }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_ != nullptr ? storage_->device() : Device::cpu; }
  Layout layout() const { return layout_; }

  // Typed host access; checks the dtype and that the tensor lives on the CPU.
  template <class T> T* data();
  template <class T> const T* data() const;
  void* raw_data() const;  // any device, no checks

  // A view of the same storage with another shape of the same numel (row-major, so 4-D
  // tensors must be NCHW). The result is NCHW-tagged.
  Tensor reshape(Shape shape) const;
  // The same bytes, read as another layout: only for code that has just rearranged them.
  Tensor with_layout(Layout layout) const;
  Tensor clone() const;
  Tensor to(Device device) const;
  // Moves the storage to `device` in place: every tensor sharing it (a layer's member and the
  // module's registered copy) now lives there. Module::to uses it.
  void move_to(Device device) const;
  void copy_from(const Tensor& src);  // same numel and dtype; any devices
  void fill(double value);
  bool shares_storage(const Tensor& other) const { return storage_ == other.storage_; }
  // Lets go of the storage and keeps shape, dtype and layout: defined() turns false, numel() and
  // describe() still say what it was (Variable::release_data).
  void release_storage() { storage_.reset(); }
  std::string describe() const;       // "f32[64, 16, 28, 28] NCHW cpu"

 private:
  std::shared_ptr<Storage> storage_;
  Shape shape_;
  std::int64_t numel_ = 0;
  DType dtype_ = DType::f32;
  Layout layout_ = Layout::NCHW;

  void check_host_access(DType expected) const;
};

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }

template <class T> T* Tensor::data() {
  check_host_access(dtype_of<T>());
  return static_cast<T*>(storage_->data());
}

template <class T> const T* Tensor::data() const {
  check_host_access(dtype_of<T>());
  return static_cast<const T*>(storage_->data());
}

// Runs fn.template operator()<float or double>() for the tensor's dtype.
template <class Fn> decltype(auto) dispatch_dtype(DType dtype, Fn&& fn) {
  if (dtype == DType::f64) return fn.template operator()<double>();
  return fn.template operator()<float>();
}

}  // namespace tunecnn
