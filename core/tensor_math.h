#pragma once
// The elementwise arithmetic core itself needs: gradient accumulation and optimizer updates.
// Tensors of either dtype on either device (both operands on the same one); shapes must have equal
// numel. Reductions return to the host; on the GPU they also run in double, in a fixed order.
#include "core/tensor.h"

namespace tunecnn {

void add_inplace(Tensor& dst, const Tensor& src);                 // dst += src
void axpy_inplace(Tensor& dst, double alpha, const Tensor& x);    // dst += alpha * x
void scale_inplace(Tensor& dst, double alpha);                    // dst *= alpha
Tensor add(const Tensor& a, const Tensor& b);                     // a + b, a fresh tensor
double sum(const Tensor& t);                                      // in double, fixed order
double max_abs_diff(const Tensor& a, const Tensor& b);
bool all_finite(const Tensor& t);

namespace cuda {  // the GPU versions (core/tensor_math.cu); callers use the functions above
void axpy_inplace(Tensor& dst, double alpha, const Tensor& x);
void scale_inplace(Tensor& dst, double alpha);
double sum(const Tensor& t);
double max_abs_diff(const Tensor& a, const Tensor& b);
bool all_finite(const Tensor& t);
void fill(Tensor& t, double value);
}  // namespace cuda

}  // namespace tunecnn
