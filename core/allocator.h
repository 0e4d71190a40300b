#pragma once
// A caching allocator per device. Freed blocks are kept and handed out again, so a training
// step that repeats the same shapes touches no fresh pages (fresh page faults cost some conv
// layers 2-10x in PyTorch on these machines). Current and peak bytes are first-class figures:
// MEC exists to lower the peak.
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

#include "core/types.h"

namespace tunecnn {

struct MemoryStats {
  std::size_t current_bytes = 0;  // in live blocks
  std::size_t peak_bytes = 0;     // highest current_bytes since the last reset_peak()
  std::size_t cached_bytes = 0;   // freed blocks kept for reuse
  std::size_t system_allocations = 0;
  std::size_t reused_allocations = 0;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  void* allocate(std::size_t bytes);
  void deallocate(void* ptr, std::size_t bytes);
  MemoryStats stats() const;
  void reset_peak();
  // Gives every cached block back to the system; derived destructors call it while
  // system_free still works.
  void release_cached();
  static std::size_t block_size(std::size_t bytes);  // what a request really takes

 protected:
  virtual void* system_allocate(std::size_t bytes) = 0;
  virtual void system_free(void* ptr) = 0;

 private:
  mutable std::mutex mutex_;
  std::multimap<std::size_t, void*> free_blocks_;
  MemoryStats stats_;
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
  // Moves the bytes to `device` in place, so every tensor sharing this storage follows.
  void move_to(Device device);

 private:
  void* data_;
  std::size_t bytes_;
  Device device_;
};

}  // namespace tunecnn
