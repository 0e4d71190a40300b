#pragma once
// The elementwise arithmetic core itself needs: gradient accumulation and optimizer updates.
// CPU tensors of either dtype; shapes must have equal numel.
#include "core/tensor.h"

namespace tunecnn {

void add_inplace(Tensor& dst, const Tensor& src);                 // dst += src
void axpy_inplace(Tensor& dst, double alpha, const Tensor& x);    // dst += alpha * x
void scale_inplace(Tensor& dst, double alpha);                    // dst *= alpha
Tensor add(const Tensor& a, const Tensor& b);                     // a + b, a fresh tensor
double sum(const Tensor& t);                                      // in double, fixed order
double max_abs_diff(const Tensor& a, const Tensor& b);
bool all_finite(const Tensor& t);

}  // namespace tunecnn
