#include "core/allocator.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <new>
#include <tuple>

#include <sys/mman.h>

#include "core/allocation_trace.h"
#include "core/cuda_runtime.h"
#include "core/error.h"

namespace tunecnn {
namespace {

constexpr std::size_t kAlignment = 64;           // a cache line, and enough for AVX-512 loads
constexpr std::size_t kLargeBlock = 1 << 20;     // above this, round to kLargeGranule
constexpr std::size_t kLargeGranule = 64 << 10;
constexpr std::size_t kHugePage = 2 << 20;

class CpuAllocator final : public Allocator {
 public:
  ~CpuAllocator() override { release_cached(); }

 protected:
  // Large blocks are mapped directly, so that one given back leaves the resident set at once:
  // from malloc, a freed block under glibc's (self-raising) mmap threshold stays in its heap.
  void* system_allocate(std::size_t bytes) override {
    void* ptr = nullptr;
    if (bytes >= kLargeBlock) {
      ptr = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (ptr == MAP_FAILED) ptr = nullptr;
      if (ptr != nullptr && bytes >= kHugePage) madvise(ptr, bytes, MADV_HUGEPAGE);
    } else {
      ptr = std::aligned_alloc(kAlignment, bytes);
    }
    TUNECNN_CHECK(ptr != nullptr, "out of host memory allocating ", bytes, " bytes");
    return ptr;
  }
  void system_free(void* ptr, std::size_t bytes) override {
    if (bytes >= kLargeBlock)
      munmap(ptr, bytes);
    else
      std::free(ptr);
  }
  bool reuses_larger_blocks() const override { return true; }
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

CachePolicy parse_cache_policy(const std::string& name) {
  if (name == "keep") return CachePolicy::keep;
  if (name == "bounded") return CachePolicy::bounded;
  throw Error("an allocator cache policy must be keep or bounded, not '" + name + "'");
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
  // What lives for good (parameters, the optimizer's state) stays out of the region: made in the
  // middle of a step, it would split the region for every step after.
  const bool for_good = use == MemoryUse::parameters || use == MemoryUse::optimizer_state;
  void* ptr = arena_ && !for_good ? arena_->take(size) : nullptr;
  if (ptr != nullptr)
    ++stats_.reused_allocations;
  else
    ptr = from_cache_or_system(size, use, lock);
  stats_.current_bytes += size;
  stats_.current_by_use[static_cast<std::size_t>(use)] += size;
  if (trace_ != nullptr)
    trace_->add({AllocationEvent::Kind::allocate, use, bytes, 0, ptr, current_layer()});
  live_high_water_ = std::max(live_high_water_, stats_.current_bytes + stats_.slack_bytes);
  if (stats_.current_bytes > stats_.peak_bytes) {
    stats_.peak_bytes = stats_.current_bytes;
    stats_.at_peak_by_use = stats_.current_by_use;
  }
  return ptr;
}

void* Allocator::from_cache_or_system(std::size_t size, MemoryUse use, std::unique_lock<std::mutex>& lock) {
  // Exact size classes first: a training step repeats its shapes, so exact matches are the rule
  // and no reused block wastes memory.
  auto it = free_blocks_.find(size);
  const bool activation_or_gradient = use == MemoryUse::activations || use == MemoryUse::gradients;
  // Not under a cache limit (a memory budget): a larger block's excess, held while it lives, could
  // take live blocks over the limit by the time the step peaks.
  if (it == free_blocks_.end() && activation_or_gradient && reuses_larger_blocks() && cache_limit_ == 0) {
    // Else, for an activation or a gradient, a cached block up to twice the size: fewer blocks
    // held for the sizes a step has at different moments, and under the bounded policy fewer
    // given back and made again. Not for parameters and optimizer state (they would hold the
    // excess for good), nor for workspaces and layout copies, which take exactly what their
    // solver or transform declares (the planner's arithmetic, and a test, rely on it).
    it = free_blocks_.lower_bound(size);
    if (it != free_blocks_.end() && it->first > 2 * size) it = free_blocks_.end();
  }
  if (it != free_blocks_.end()) {
    const auto [held, ptr] = *it;
    free_blocks_.erase(it);
    stats_.cached_bytes -= held;
    ++stats_.reused_allocations;
    if (held != size) {
      larger_blocks_.emplace(ptr, held);
      stats_.slack_bytes += held - size;
    }
    return ptr;
  }
  const auto released = blocks_to_release_for(size);
  lock.unlock();
  for (const auto& [bytes, block] : released) system_free(block, bytes);
  void* ptr = system_allocate(size);
  lock.lock();
  ++stats_.system_allocations;
  stats_.peak_held_bytes = std::max(stats_.peak_held_bytes, held_bytes() + size);
  return ptr;
}

std::vector<std::pair<std::size_t, void*>> Allocator::blocks_to_release_for(std::size_t size) {
  std::vector<std::pair<std::size_t, void*>> released;
  if (cache_policy_ != CachePolicy::bounded) return released;
  // An arena's free bytes are held too: a block it could not serve must not take the cache past
  // the limit beside it.
  const std::size_t live_after = held_bytes() - stats_.cached_bytes + size;
  const std::size_t limit = std::max({live_high_water_, live_after, cache_limit_});
  while (live_after + stats_.cached_bytes > limit && !free_blocks_.empty()) {
    const std::size_t excess = live_after + stats_.cached_bytes - limit;
    auto it = free_blocks_.lower_bound(excess);  // the smallest block that makes room alone
    if (it == free_blocks_.end()) it = std::prev(free_blocks_.end());
    released.push_back(*it);
    stats_.cached_bytes -= it->first;
    free_blocks_.erase(it);
  }
  return released;
}

void Allocator::set_cache_policy(CachePolicy policy) {
  std::lock_guard lock(mutex_);
  cache_policy_ = policy;
}

void Allocator::set_cache_limit(std::size_t bytes, std::size_t kept_for_good) {
  std::multimap<std::size_t, void*> cached;
  std::size_t live = 0;
  {
    std::lock_guard lock(mutex_);
    cache_limit_ = bytes;
    // Under a limit the arena serves; blocks cached outside it would be held beyond the limit.
    cached.swap(free_blocks_);
    stats_.cached_bytes = 0;
    if (arena_) retired_arenas_.push_back(std::move(arena_));
    live = stats_.current_bytes + stats_.slack_bytes;
    live_high_water_ = live;  // the limit counts from here
  }
  for (const auto& [size, block] : cached) system_free(block, size);
  release_empty_arenas();
  if (bytes <= live + kept_for_good) return;
  // The rest of the budget, one region: its pages are made resident as blocks first touch them.
  const std::size_t region = (bytes - live - kept_for_good) / kLargeGranule * kLargeGranule;
  if (region == 0) return;
  void* base = system_allocate(region);
  std::lock_guard lock(mutex_);
  arena_ = std::make_unique<BudgetArena>(base, region);
  ++stats_.system_allocations;
  stats_.peak_held_bytes = std::max(stats_.peak_held_bytes, held_bytes());
}

void Allocator::release_empty_arenas() {
  std::vector<std::unique_ptr<BudgetArena>> empty;
  {
    std::lock_guard lock(mutex_);
    for (auto it = retired_arenas_.begin(); it != retired_arenas_.end();) {
      if ((*it)->free_bytes() == (*it)->size()) {
        empty.push_back(std::move(*it));
        it = retired_arenas_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const auto& arena : empty) system_free(arena->base(), arena->size());
}

CachePolicy Allocator::cache_policy() const {
  std::lock_guard lock(mutex_);
  return cache_policy_;
}

std::size_t Allocator::cache_limit() const {
  std::lock_guard lock(mutex_);
  return cache_limit_;
}

void Allocator::set_trace(AllocationTrace* trace) {
  std::lock_guard lock(mutex_);
  trace_ = trace;
}

void Allocator::deallocate(void* ptr, std::size_t bytes, MemoryUse use) {
  if (ptr == nullptr) return;
  const std::size_t size = block_size(bytes);
  std::lock_guard lock(mutex_);
  if (trace_ != nullptr) trace_->add({AllocationEvent::Kind::free, use, bytes, 0, ptr, nullptr});
  if (give_to_arena(ptr)) {
    stats_.current_bytes -= size;
    stats_.current_by_use[static_cast<std::size_t>(use)] -= size;
    return;
  }
  std::size_t held = size;
  if (const auto larger = larger_blocks_.find(ptr); larger != larger_blocks_.end()) {
    held = larger->second;
    stats_.slack_bytes -= held - size;
    larger_blocks_.erase(larger);
  }
  free_blocks_.emplace(held, ptr);
  stats_.current_bytes -= size;
  stats_.current_by_use[static_cast<std::size_t>(use)] -= size;
  stats_.cached_bytes += held;
}

MemoryStats Allocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void Allocator::reset_peak() {
  std::lock_guard lock(mutex_);
  stats_.peak_bytes = stats_.current_bytes;
  stats_.at_peak_by_use = stats_.current_by_use;
  stats_.peak_held_bytes = held_bytes();
}

bool Allocator::give_to_arena(void* ptr) {
  if (arena_ && arena_->give(ptr)) return true;
  for (const auto& retired : retired_arenas_)
    if (retired->give(ptr)) return true;
  return false;
}

std::size_t Allocator::held_bytes() const {
  std::size_t reserved = arena_ ? arena_->free_bytes() : 0;
  for (const auto& retired : retired_arenas_) reserved += retired->free_bytes();
  return stats_.current_bytes + stats_.slack_bytes + stats_.cached_bytes + reserved;
}

void Allocator::release_cached() {
  std::multimap<std::size_t, void*> blocks;
  {
    std::lock_guard lock(mutex_);
    blocks.swap(free_blocks_);
    stats_.cached_bytes = 0;
    live_high_water_ = stats_.current_bytes + stats_.slack_bytes;
    if (arena_) retired_arenas_.push_back(std::move(arena_));  // freed below if nothing lives in it
  }
  for (auto& [size, ptr] : blocks) system_free(ptr, size);
  release_empty_arenas();
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
