#pragma once
// CUDA kernels on the host, for machines without a GPU (-DTUNECNN_CUDA=EMULATE). Every .cu file is
// rewritten by cu_to_host (a launch becomes emu::launch) and compiled as C++ with this header
// included first. A launch runs its blocks one after another; the threads of a block are fibers
// on the calling thread that switch only at barriers (__syncthreads, warp shuffles, __syncwarp),
// each running as far as it can first. So a kernel that reads shared memory without the barrier
// that orders it sees stale data, a barrier not reached by every thread is reported, and a bad
// launch configuration becomes cudaErrorInvalidConfiguration as on a GPU; TUNECNN_EMU_REVERSE=1
// runs blocks and threads last first, so results that depend on their order change. A launch on
// the legacy default stream once a non-blocking stream exists aborts (cudart.cpp says why). What
// it cannot show: races that reordering does not expose, a missing host/stream wait (every call
// completes before it returns), timing, and anything of the real cuBLAS/cuDNN beyond their
// documented contracts (cublas.cpp, cudnn.cpp).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>

#undef __global__
#define __global__
#undef __device__
#define __device__
#undef __host__
#define __host__
#undef __launch_bounds__
#define __launch_bounds__(...)
#undef __forceinline__
#define __forceinline__ inline
// Blocks run one at a time, so one static object per declaration is each block's shared memory.
#undef __shared__
#define __shared__ static

namespace tunecnn::emu {

inline thread_local uint3 thread_index, block_index;
inline thread_local dim3 block_size, grid_size;

// Runs `thread_body` once per thread of every block; on a bad configuration it records
// cudaErrorInvalidConfiguration for cudaGetLastError and runs nothing.
void launch(dim3 grid, dim3 block, std::size_t dynamic_shared_bytes, cudaStream_t,
            const std::function<void()>& thread_body);

// Waits until every thread of the block (or of the caller's warp) has arrived.
void block_barrier();
void warp_barrier();

// The running block's dynamic shared memory (extern __shared__), 16-byte aligned.
unsigned char* dynamic_shared();

// __shfl_down_sync's exchange: each lane posts a value, then reads lane + delta's.
void post_lane_value(const void* value, std::size_t bytes);
bool read_lane_value(unsigned delta, void* value, std::size_t bytes);

}  // namespace tunecnn::emu

#define threadIdx (::tunecnn::emu::thread_index)
#define blockIdx (::tunecnn::emu::block_index)
#define blockDim (::tunecnn::emu::block_size)
#define gridDim (::tunecnn::emu::grid_size)
#define TUNECNN_EMU_DYNAMIC_SHARED(type) reinterpret_cast<type*>(::tunecnn::emu::dynamic_shared())

inline void __syncthreads() { tunecnn::emu::block_barrier(); }
inline void __syncwarp(unsigned = 0xffffffffu) { tunecnn::emu::warp_barrier(); }

template <class T>
T __shfl_down_sync(unsigned, T value, unsigned delta, int = 32) {
  tunecnn::emu::post_lane_value(&value, sizeof value);
  tunecnn::emu::warp_barrier();
  T result = value;  // a lane past the warp's end reads its own value, as on a GPU
  tunecnn::emu::read_lane_value(delta, &result, sizeof result);
  tunecnn::emu::warp_barrier();  // no lane posts again before every lane has read
  return result;
}

template <class T>
T __ldg(const T* p) { return *p; }

template <class T>
T atomicAdd(T* address, T value) {  // one thread runs at a time
  const T old = *address;
  *address = old + value;
  return old;
}

// CUDA's device maths in the global namespace.
using std::isfinite;
using std::isinf;
using std::isnan;
using std::max;
using std::min;
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
