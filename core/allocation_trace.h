#pragma once
// A record, in order, of the blocks an allocator hands out and takes back during a stretch of
// work, with marks that other layers place between them (a conv call's start and end, say). The
// step memory predictor (autotune/step_memory.h) records a training step at two small batches
// and replays the records at the real one, so that a plan's peak is known without running it.
#include <any>
#include <cstddef>
#include <mutex>
#include <vector>

#include "core/allocator.h"

namespace tunecnn {

struct AllocationEvent {
  enum class Kind : std::uint8_t { allocate, free, mark_begin, mark_end };
  Kind kind = Kind::allocate;
  MemoryUse use = MemoryUse::activations;
  std::size_t bytes = 0;      // allocate and free: as requested (before Allocator::block_size)
  std::size_t mark = 0;       // mark_begin and mark_end: an index into AllocationTrace::marks()
  const void* block = nullptr;  // allocate and free: the block, which pairs them
  const void* layer = nullptr;  // allocate: the layer running on this thread (LayerScope), if any
};

class AllocationTrace {
 public:
  void add(const AllocationEvent& event);
  // Records a mark and returns its index, for a mark_end later.
  std::size_t begin_mark(std::any payload);
  void end_mark(std::size_t mark);
  std::vector<AllocationEvent> events() const;
  std::vector<std::any> marks() const;

 private:
  mutable std::mutex mutex_;
  std::vector<AllocationEvent> events_;
  std::vector<std::any> marks_;
};

// Records into `trace` every block `allocator` hands out and takes back while it lives, and the
// marks placed meanwhile (on any thread); one at a time.
class AllocationTraceScope {
 public:
  AllocationTraceScope(Allocator& allocator, AllocationTrace& trace);
  ~AllocationTraceScope();
  AllocationTraceScope(const AllocationTraceScope&) = delete;
  AllocationTraceScope& operator=(const AllocationTraceScope&) = delete;

 private:
  Allocator& allocator_;
};

// The trace being recorded, or null: what marks are placed into.
AllocationTrace* active_allocation_trace();

// Names the layer whose forward runs on this thread, for the blocks it makes (Sequential sets
// it), so that a trace can say which layers keep the most.
class LayerScope {
 public:
  explicit LayerScope(const void* layer);
  ~LayerScope();
  LayerScope(const LayerScope&) = delete;
  LayerScope& operator=(const LayerScope&) = delete;

 private:
  const void* outer_;
};
const void* current_layer();

// The mark Variable::backward places around a whole backward pass.
struct BackwardMark {};
inline constexpr BackwardMark kBackwardMark{};

// Places a mark around a stretch of work when a trace is being recorded; nothing otherwise.
class TraceMark {
 public:
  explicit TraceMark(std::any payload);
  ~TraceMark();
  TraceMark(const TraceMark&) = delete;
  TraceMark& operator=(const TraceMark&) = delete;

 private:
  AllocationTrace* trace_;
  std::size_t mark_ = 0;
};

}  // namespace tunecnn
