#include "core/budget_arena.h"

#include <iterator>

namespace tunecnn {

BudgetArena::BudgetArena(void* base, std::size_t bytes)
    : base_(static_cast<char*>(base)), bytes_(bytes), free_bytes_(0) {
  if (bytes > 0) add_free(0, bytes);
}

void BudgetArena::add_free(std::size_t offset, std::size_t size) {
  free_by_offset_.emplace(offset, size);
  free_by_size_.emplace(size, offset);
  free_bytes_ += size;
}

void BudgetArena::remove_free(std::map<std::size_t, std::size_t>::iterator range) {
  const auto [offset, size] = *range;
  auto [first, last] = free_by_size_.equal_range(size);
  while (first != last && first->second != offset) ++first;
  free_by_size_.erase(first);
  free_by_offset_.erase(range);
  free_bytes_ -= size;
}

void* BudgetArena::take(std::size_t bytes) {
  const auto fit = free_by_size_.lower_bound(bytes);  // the smallest range that holds it
  if (fit == free_by_size_.end()) return nullptr;
  const auto [size, offset] = *fit;
  remove_free(free_by_offset_.find(offset));
  // The block takes the front; the rest stays free.
  if (size > bytes) add_free(offset + bytes, size - bytes);
  void* block = base_ + offset;
  taken_.emplace(block, bytes);
  return block;
}

bool BudgetArena::give(void* ptr) {
  const auto it = taken_.find(ptr);
  if (it == taken_.end()) return false;
  std::size_t offset = static_cast<std::size_t>(static_cast<char*>(ptr) - base_);
  std::size_t size = it->second;
  taken_.erase(it);
  // Merged with a free range after it and one before it.
  if (const auto next = free_by_offset_.find(offset + size); next != free_by_offset_.end()) {
    size += next->second;
    remove_free(next);
  }
  if (auto next = free_by_offset_.lower_bound(offset); next != free_by_offset_.begin()) {
    const auto previous = std::prev(next);
    if (previous->first + previous->second == offset) {
      offset = previous->first;
      size += previous->second;
      remove_free(previous);
    }
  }
  add_free(offset, size);
  return true;
}

}  // namespace tunecnn
