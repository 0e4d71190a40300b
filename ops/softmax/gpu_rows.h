#pragma once
// What the GPU softmax solvers (fused.cu, five_pass.cu) share around their kernels: the labels
// uploaded for one call, and the per-row losses the kernels leave on the device brought back and
// averaged in row order, as on the CPU. CUDA builds only (gpu_rows_cuda.cpp).
#include <cstdint>
#include <memory>
#include <vector>

#include "core/allocator.h"
#include "core/tensor.h"

namespace tunecnn {

// The labels in device memory (a few hundred bytes per call). Storage does not move, hence the
// pointer.
std::unique_ptr<Storage> labels_on_gpu(const std::vector<std::int32_t>& labels);

// mean_row_loss (problem.h) of a device tensor of f64 row losses.
double mean_row_loss_on_gpu(const Tensor& row_loss);

}  // namespace tunecnn
