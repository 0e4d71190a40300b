// The CUDA runtime calls tunecnn makes, on the host (-DTUNECNN_CUDA=EMULATE): device memory is
// host memory, filled with 0xFF bytes (NaN) when allocated, every call completes before it
// returns, and events read the steady clock. Work on the legacy default stream once a
// cudaStreamNonBlocking stream exists aborts with a message: on a GPU that work would not wait for
// the other stream's (tunecnn queues everything on one non-blocking stream), a race that calls
// completing in order would otherwise hide. The device holds TUNECNN_EMU_DEVICE_BYTES (8 GiB by
// default); an allocation past that fails with cudaErrorMemoryAllocation, as on a full GPU.
#include <cuda_runtime_api.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace {
thread_local cudaError_t last_error = cudaSuccess;
std::mutex mu;
std::map<void*, size_t> live;
size_t live_bytes = 0;
std::atomic<bool> nonblocking_stream_exists{false};

size_t capacity() {
  const char* s = std::getenv("TUNECNN_EMU_DEVICE_BYTES");
  return s ? std::strtoull(s, nullptr, 10) : (size_t{8} << 30);
}
cudaError_t fail(cudaError_t e) { last_error = e; return e; }
struct Event { double ms = 0; bool recorded = false; };
double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

extern "C" void tunecnn_emu_set_last_error(cudaError_t e) { last_error = e; }

// Called by every emulated call that queues work (cudart, kernel launches, cuBLAS, cuDNN).
extern "C" void tunecnn_emu_check_stream(cudaStream_t stream, const char* call) {
  if (stream != nullptr || !nonblocking_stream_exists) return;
  std::fprintf(stderr, "CUDA emulation: %s on the legacy default stream while a "
               "cudaStreamNonBlocking stream exists; on a GPU it would not wait for that stream's "
               "work (a race)\n", call);
  std::abort();
}

namespace {
// Both memcpy calls: the stream check names the caller.
cudaError_t copy(void* dst, const void* src, size_t bytes, cudaStream_t stream, const char* call) {
  tunecnn_emu_check_stream(stream, call);
  if (bytes && (dst == nullptr || src == nullptr)) return fail(cudaErrorInvalidValue);
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}
}  // namespace

extern "C" {
cudaError_t cudaGetLastError() { cudaError_t e = last_error; last_error = cudaSuccess; return e; }
cudaError_t cudaPeekAtLastError() { return last_error; }
const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidValue: return "invalid argument";
    default: return "emulated CUDA error";
  }
}
cudaError_t cudaGetDeviceCount(int* n) { *n = 1; return cudaSuccess; }
cudaError_t cudaGetDevice(int* d) { *d = 0; return cudaSuccess; }
cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int device) {
  if (device != 0) return fail(cudaErrorInvalidDevice);
  if (a == cudaDevAttrMultiProcessorCount) { *v = 4; return cudaSuccess; }
  return fail(cudaErrorInvalidValue);
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int device) {
  if (device != 0) return fail(cudaErrorInvalidDevice);
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->name, sizeof p->name, "CUDA emulation on the host");
  p->multiProcessorCount = 4;
  p->major = 9; p->minor = 0;
  p->totalGlobalMem = capacity();
  p->sharedMemPerBlock = 48 * 1024;
  p->maxThreadsPerBlock = 1024;
  p->warpSize = 32;
  return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int* v) { *v = 13000; return cudaSuccess; }
cudaError_t cudaRuntimeGetVersion(int* v) { *v = 13000; return cudaSuccess; }
cudaError_t cudaMalloc(void** p, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu);
  if (bytes > capacity() || live_bytes + bytes > capacity()) { *p = nullptr; return fail(cudaErrorMemoryAllocation); }
  *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
  if (*p == nullptr) return fail(cudaErrorMemoryAllocation);
  std::memset(*p, 0xFF, bytes);  // fresh device memory holds garbage: NaN bytes here
  live[*p] = bytes;
  live_bytes += bytes;
  return cudaSuccess;
}
cudaError_t cudaFree(void* p) {
  if (p == nullptr) return cudaSuccess;
  std::lock_guard<std::mutex> lock(mu);
  auto it = live.find(p);
  if (it == live.end()) { std::fprintf(stderr, "CUDA emulation: cudaFree of a pointer cudaMalloc did not return\n"); return fail(cudaErrorInvalidValue); }
  live_bytes -= it->second;
  live.erase(it);
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void** p, size_t bytes) { *p = std::malloc(bytes ? bytes : 1); return *p ? cudaSuccess : fail(cudaErrorMemoryAllocation); }
cudaError_t cudaFreeHost(void* p) { std::free(p); return cudaSuccess; }
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind, cudaStream_t s) {
  return copy(dst, src, bytes, s, "cudaMemcpyAsync");
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind) {
  return copy(dst, src, bytes, nullptr, "cudaMemcpy");
}
cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t s) {
  tunecnn_emu_check_stream(s, "cudaMemsetAsync");
  if (bytes && dst == nullptr) return fail(cudaErrorInvalidValue);
  std::memset(dst, value, bytes);
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags) {
  *s = reinterpret_cast<cudaStream_t>(new int(1));
  if (flags & cudaStreamNonBlocking) nonblocking_stream_exists = true;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
cudaError_t cudaEventCreate(cudaEvent_t* e) { *e = reinterpret_cast<cudaEvent_t>(new Event); return cudaSuccess; }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) { return cudaEventCreate(e); }
cudaError_t cudaEventDestroy(cudaEvent_t e) { delete reinterpret_cast<Event*>(e); return cudaSuccess; }
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  tunecnn_emu_check_stream(s, "cudaEventRecord");
  auto* ev = reinterpret_cast<Event*>(e);
  ev->ms = now_ms(); ev->recorded = true;
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  auto* x = reinterpret_cast<Event*>(a); auto* y = reinterpret_cast<Event*>(b);
  if (!x->recorded || !y->recorded) return fail(cudaErrorInvalidResourceHandle);
  *ms = static_cast<float>(y->ms - x->ms);
  return cudaSuccess;
}
}
