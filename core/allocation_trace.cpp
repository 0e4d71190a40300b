#include "core/allocation_trace.h"

#include <atomic>
#include <utility>

#include "core/error.h"

namespace tunecnn {
namespace {

std::atomic<AllocationTrace*> g_active_trace{nullptr};
thread_local const void* this_threads_layer = nullptr;

}  // namespace

void AllocationTrace::add(const AllocationEvent& event) {
  std::lock_guard lock(mutex_);
  events_.push_back(event);
}

std::size_t AllocationTrace::begin_mark(std::any payload) {
  std::lock_guard lock(mutex_);
  marks_.push_back(std::move(payload));
  AllocationEvent event;
  event.kind = AllocationEvent::Kind::mark_begin;
  event.mark = marks_.size() - 1;
  events_.push_back(event);
  return event.mark;
}

void AllocationTrace::end_mark(std::size_t mark) {
  AllocationEvent event;
  event.kind = AllocationEvent::Kind::mark_end;
  event.mark = mark;
  add(event);
}

std::vector<AllocationEvent> AllocationTrace::events() const {
  std::lock_guard lock(mutex_);
  return events_;
}

std::vector<std::any> AllocationTrace::marks() const {
  std::lock_guard lock(mutex_);
  return marks_;
}

AllocationTraceScope::AllocationTraceScope(Allocator& allocator, AllocationTrace& trace) : allocator_(allocator) {
  AllocationTrace* none = nullptr;
  TUNECNN_CHECK(g_active_trace.compare_exchange_strong(none, &trace), "an allocation trace is already being recorded");
  allocator_.set_trace(&trace);
}

AllocationTraceScope::~AllocationTraceScope() {
  allocator_.set_trace(nullptr);
  g_active_trace = nullptr;
}

AllocationTrace* active_allocation_trace() { return g_active_trace.load(std::memory_order_relaxed); }

LayerScope::LayerScope(const void* layer) : outer_(this_threads_layer) { this_threads_layer = layer; }

LayerScope::~LayerScope() { this_threads_layer = outer_; }

const void* current_layer() { return this_threads_layer; }

TraceMark::TraceMark(std::any payload) : trace_(active_allocation_trace()) {
  if (trace_ != nullptr) mark_ = trace_->begin_mark(std::move(payload));
}

TraceMark::~TraceMark() {
  if (trace_ != nullptr) trace_->end_mark(mark_);
}

}  // namespace tunecnn
