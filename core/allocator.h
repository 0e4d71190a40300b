#pragma once
// A caching allocator per device. Freed blocks are kept and handed out again, so a training
// step that repeats the same shapes touches no fresh pages (fresh page faults cost some conv
// layers 2-10x in PyTorch on these machines). Current and peak bytes are first-class figures:
// MEC exists to lower the peak.
#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/budget_arena.h"
#include "core/types.h"

namespace tunecnn {

class AllocationTrace;

// What a block is for, so that a training step's peak can be split by use (bench memory). A
// thread counts new blocks under the use its innermost MemoryUseScope names, activations when
// none does; a block keeps its use until it is freed.
enum class MemoryUse : std::uint8_t {
  activations,      // outputs of the forward pass (and whatever is not named below)
  parameters,       // weights and buffers, made when a model is built
  optimizer_state,  // SGD's momentum
  gradients,        // everything backward makes that is not a workspace or a layout copy
  workspaces,       // solvers' scratch memory
  layout_copies,    // activations or gradients transformed to another layout
};
inline constexpr std::size_t kMemoryUses = 6;
const char* to_string(MemoryUse use);

class MemoryUseScope {
 public:
  explicit MemoryUseScope(MemoryUse use);
  ~MemoryUseScope();
  MemoryUseScope(const MemoryUseScope&) = delete;
  MemoryUseScope& operator=(const MemoryUseScope&) = delete;

 private:
  MemoryUse outer_;
};
MemoryUse current_memory_use();  // on this thread

using BytesByUse = std::array<std::size_t, kMemoryUses>;  // indexed by MemoryUse

struct MemoryStats {
  // In live blocks, each at the size its request takes (block_size), as PyTorch's
  // memory_allocated counts: what a step needs, which the step memory predictor predicts.
  std::size_t current_bytes = 0;
  std::size_t peak_bytes = 0;     // highest current_bytes since the last reset_peak()
  BytesByUse current_by_use{};    // current_bytes split by use
  BytesByUse at_peak_by_use{};    // current_by_use when the peak was reached
  std::size_t cached_bytes = 0;   // freed blocks kept for reuse
  std::size_t slack_bytes = 0;    // what live blocks hold beyond their requests (a larger cached block reused)
  std::size_t peak_held_bytes = 0;  // highest current + slack + cached since the last reset_peak(): what
                                    // the system gave, the resident set's share of the allocator
  std::size_t system_allocations = 0;
  std::size_t reused_allocations = 0;
};

// What an allocator does with freed blocks. keep: holds every one for reuse, so a training step
// repeats without a system call or a page fault, but blocks of sizes the step does not need at
// the same time are all held (AlexNet, batch 8: 817 MB held for 680 MB live). bounded: live +
// cached bytes never exceed the highest live total seen; a miss first gives back cached blocks
// (the smallest one that makes room, else the largest), paid for in page faults when they are
// made again (bench memory, docs/BENCHMARKS.md: 13-41% slower steps on the CPU).
enum class CachePolicy { keep, bounded };
CachePolicy parse_cache_policy(const std::string& name);  // "keep" or "bounded"; else an Error

class Allocator {
 public:
  virtual ~Allocator() = default;
  void* allocate(std::size_t bytes, MemoryUse use = current_memory_use());
  void deallocate(void* ptr, std::size_t bytes, MemoryUse use);
  MemoryStats stats() const;
  void reset_peak();
  // Gives every cached block back to the system, and the budget's region (set_cache_limit) once
  // nothing lives in it; derived destructors call it while system_free still works. The bounded
  // policy's high-water mark starts again from what is live: a smaller workload after it (bench
  // memory --max-batch's next try) is not allowed the cache of a larger one before.
  void release_cached();
  static std::size_t block_size(std::size_t bytes);  // what a request really takes
  void set_cache_policy(CachePolicy policy);          // keep by default
  // A memory budget (train --memory-budget): what is not live now of `bytes`, less
  // `kept_for_good` (parameters and optimizer state still to come: they stay out of the region),
  // becomes one region (core/budget_arena.h) that serves every other block from then on, split
  // and merged, so that live blocks and the region together stay within `bytes` and no block is
  // given back and made again. A block the region cannot hold (it is full, or too fragmented)
  // comes from the cache or the system as before, the bounded policy limiting the cache to `bytes`. The cache is given
  // back at once; a region with live blocks in it serves their frees until it is empty. 0 (the
  // default): no region.
  void set_cache_limit(std::size_t bytes, std::size_t kept_for_good = 0);
  CachePolicy cache_policy() const;
  std::size_t cache_limit() const;
  // Records every block handed out and taken back into `trace` (null: stops); AllocationTraceScope.
  void set_trace(AllocationTrace* trace);

 protected:
  virtual void* system_allocate(std::size_t bytes) = 0;
  virtual void system_free(void* ptr, std::size_t bytes) = 0;  // bytes: as allocated
  // A miss for an activation or a gradient may take a cached block up to twice the size (the
  // CPU's; the GPU's takes exact sizes).
  virtual bool reuses_larger_blocks() const { return false; }

 private:
  mutable std::mutex mutex_;
  std::multimap<std::size_t, void*> free_blocks_;
  MemoryStats stats_;
  std::unordered_map<void*, std::size_t> larger_blocks_;  // live blocks larger than asked: their size
  std::size_t live_high_water_ = 0;  // the highest current_bytes since release_cached (reset_peak leaves it)
  CachePolicy cache_policy_ = CachePolicy::keep;
  std::size_t cache_limit_ = 0;
  std::unique_ptr<BudgetArena> arena_;  // under a cache limit
  std::vector<std::unique_ptr<BudgetArena>> retired_arenas_;  // earlier limits', blocks still live
  AllocationTrace* trace_ = nullptr;

  // Under mutex_: takes out of the cache the blocks to give back so that, under the bounded
  // policy, a new block of `size` keeps live + cached within the live high-water mark.
  std::vector<std::pair<std::size_t, void*>> blocks_to_release_for(std::size_t size);
  std::size_t held_bytes() const;  // under mutex_: live, their slack, cached and free in arenas
  // Under mutex_: a miss of the arena, from the cached blocks, else the system (unlocking for it).
  void* from_cache_or_system(std::size_t size, MemoryUse use, std::unique_lock<std::mutex>& lock);
  bool give_to_arena(void* ptr);  // under mutex_
  void release_empty_arenas();
};

Allocator& allocator_for(Device device);

// Raw bytes owned through the allocator; tensors share it.
class Storage {
 public:
  Storage(std::size_t bytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  Device device() const { return device_; }
  MemoryUse use() const { return use_; }
  // Moves the bytes to `device` in place, so every tensor sharing this storage follows.
  void move_to(Device device);

 private:
  void* data_;
  std::size_t bytes_;
  Device device_;
  MemoryUse use_;
};

}  // namespace tunecnn
