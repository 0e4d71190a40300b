#pragma once
// The few CUDA runtime services core needs. Declared always, so CPU-only builds link; without
// CUDA (or without a GPU) they report that clearly instead of failing obscurely.
#include <cstddef>
#include <string>

#include "core/types.h"

namespace tunecnn {

class Allocator;

bool cuda_built();          // compiled with the CUDA backend
int cuda_device_count();    // 0 when not built with CUDA or no GPU/driver is present
// Why cuda_device_count() is 0, in words ("CUDA driver version is insufficient for CUDA runtime
// version", "this build has no CUDA backend"); empty when a GPU is usable.
std::string cuda_unavailable_reason();
Allocator& cuda_allocator();  // throws Error when no GPU is usable
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes);
void cuda_synchronize();

}  // namespace tunecnn
