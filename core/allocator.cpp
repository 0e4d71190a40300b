#include "core/allocator.h"

#include <cstdlib>
#include <new>

#include "core/cuda_runtime.h"
#include "core/error.h"

namespace tunecnn {
namespace {

constexpr std::size_t kAlignment = 64;           // a cache line, and enough for AVX-512 loads
constexpr std::size_t kLargeBlock = 1 << 20;     // above this, round to kLargeGranule
constexpr std::size_t kLargeGranule = 64 << 10;

class CpuAllocator final : public Allocator {
 public:
  ~CpuAllocator() override { release_cached(); }

 protected:
  void* system_allocate(std::size_t bytes) override {
    void* ptr = std::aligned_alloc(kAlignment, bytes);
    TUNECNN_CHECK(ptr != nullptr, "out of host memory allocating ", bytes, " bytes");
    return ptr;
  }
  void system_free(void* ptr) override { std::free(ptr); }
};

thread_local MemoryUse this_threads_use = MemoryUse::activations;

}  // namespace

const char* to_string(MemoryUse use) {
  switch (use) {
    case MemoryUse::activations: return "activations";
    case MemoryUse::parameters: return "parameters";
    case MemoryUse::optimizer_state: return "optimizer state";
    case MemoryUse::gradients: return "gradients";
    case MemoryUse::workspaces: return "workspaces";
    case MemoryUse::layout_copies: return "layout copies";
  }
  return "?";
}

MemoryUseScope::MemoryUseScope(MemoryUse use) : outer_(this_threads_use) { this_threads_use = use; }

MemoryUseScope::~MemoryUseScope() { this_threads_use = outer_; }

MemoryUse current_memory_use() { return this_threads_use; }

std::size_t Allocator::block_size(std::size_t bytes) {
  const std::size_t granule = bytes > kLargeBlock ? kLargeGranule : kAlignment;
  return (std::max<std::size_t>(bytes, 1) + granule - 1) / granule * granule;
}

void* Allocator::allocate(std::size_t bytes, MemoryUse use) {
  const std::size_t size = block_size(bytes);
  std::unique_lock lock(mutex_);
  // Exact size classes: a training step repeats its shapes, so exact matches are the rule
  // and no reused block wastes memory.
  auto it = free_blocks_.find(size);
  void* ptr = nullptr;
  if (it != free_blocks_.end()) {
    ptr = it->second;
    free_blocks_.erase(it);
    stats_.cached_bytes -= size;
    ++stats_.reused_allocations;
  } else {
    lock.unlock();
    ptr = system_allocate(size);
    lock.lock();
    ++stats_.system_allocations;
    stats_.peak_held_bytes = std::max(stats_.peak_held_bytes, stats_.current_bytes + stats_.cached_bytes + size);
  }
  stats_.current_bytes += size;
  stats_.current_by_use[static_cast<std::size_t>(use)] += size;
  if (stats_.current_bytes > stats_.peak_bytes) {
    stats_.peak_bytes = stats_.current_bytes;
    stats_.at_peak_by_use = stats_.current_by_use;
  }
  return ptr;
}

void Allocator::deallocate(void* ptr, std::size_t bytes, MemoryUse use) {
  if (ptr == nullptr) return;
  const std::size_t size = block_size(bytes);
  std::lock_guard lock(mutex_);
  free_blocks_.emplace(size, ptr);
  stats_.current_bytes -= size;
  stats_.current_by_use[static_cast<std::size_t>(use)] -= size;
  stats_.cached_bytes += size;
}

MemoryStats Allocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void Allocator::reset_peak() {
  std::lock_guard lock(mutex_);
  stats_.peak_bytes = stats_.current_bytes;
  stats_.at_peak_by_use = stats_.current_by_use;
  stats_.peak_held_bytes = stats_.current_bytes + stats_.cached_bytes;
}

void Allocator::release_cached() {
  std::multimap<std::size_t, void*> blocks;
  {
    std::lock_guard lock(mutex_);
    blocks.swap(free_blocks_);
    stats_.cached_bytes = 0;
  }
  for (auto& [size, ptr] : blocks) system_free(ptr);
}

Allocator& allocator_for(Device device) {
  if (device == Device::cuda) return cuda_allocator();
  static CpuAllocator cpu;
  return cpu;
}

Storage::Storage(std::size_t bytes, Device device)
    : data_(allocator_for(device).allocate(bytes, current_memory_use())),
      bytes_(bytes),
      device_(device),
      use_(current_memory_use()) {}

Storage::~Storage() { allocator_for(device_).deallocate(data_, bytes_, use_); }

void Storage::move_to(Device device) {
  if (device == device_) return;
  void* moved = allocator_for(device).allocate(bytes_, use_);
  try {
    copy_bytes(moved, device, data_, device_, bytes_);
  } catch (...) {  // a failed copy (a CUDA error) must not leak the new block
    allocator_for(device).deallocate(moved, bytes_, use_);
    throw;
  }
  allocator_for(device_).deallocate(data_, bytes_, use_);
  data_ = moved;
  device_ = device;
}

}  // namespace tunecnn
