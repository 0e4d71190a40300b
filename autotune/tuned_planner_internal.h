#pragma once
// Helpers the TunedPlanner's source files share (tuned_planner*.cpp): which directions of a layer
// are planned, which device a cache section measures, and the steady clock the planner times
// itself and its writes with. Not for use outside the planner.
#include <chrono>
#include <iterator>
#include <string>
#include <vector>

#include "autotune/tuned_planner.h"

namespace tunecnn::tuned_planner_internal {

inline constexpr Direction kDirections[] = {Direction::fwd, Direction::bwd_data,
                                            Direction::bwd_weights};

inline constexpr Direction kPoolDirections[] = {Direction::fwd, Direction::bwd_data};

inline std::vector<Direction> directions(LayerUse use) {
  if (use == LayerUse::inference) return {Direction::fwd};
  if (use == LayerUse::training_from_data) return {Direction::fwd, Direction::bwd_weights};
  return {std::begin(kDirections), std::end(kDirections)};
}

inline std::vector<Direction> pool_directions(LayerUse use) {
  if (use != LayerUse::training) return {Direction::fwd};
  return {std::begin(kPoolDirections), std::end(kPoolDirections)};
}

// The device this planner's cache section measures, so its transform bandwidths are timed there:
// device_identity names GPU sections "cuda-..." (device_id(fields, "cuda")); any other id (CPU
// sections, the tests' made-up ids) is the CPU's.
inline Device section_device(const std::string& device_id) {
  return device_id.rfind("cuda-", 0) == 0 ? Device::cuda : Device::cpu;
}

inline double steady_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

}  // namespace tunecnn::tuned_planner_internal
