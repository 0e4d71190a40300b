// The costs the layout DP (layout_plan.h) reads from a TunedPlanner: each conv and pooling
// layer's milliseconds per layout from its entries, and the transform between two layouts from
// this device's measured bandwidths.
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "autotune/calibration.h"
#include "autotune/tuned_planner.h"
#include "autotune/tuned_planner_internal.h"

namespace tunecnn {
using tuned_planner_internal::kDirections;
using tuned_planner_internal::kPoolDirections;
using tuned_planner_internal::section_device;
namespace {

// The transform cost under `off` on a device whose bandwidths were never measured (see
// transform_cost).
constexpr double kUnmeasuredTransformMs = 1e6;

// One direction of a layer: its best usable candidate in a layout, or nullptr.
using BestInLayout = std::function<const CandidateResult*(Layout)>;

// Per layout, the sums over the directions of the best candidate's median and spread.
LayoutNode summed_node(const Shape& input, const std::vector<BestInLayout>& directions) {
  LayoutNode node;
  node.input = input;
  for (int l = 0; l < kLayoutCount; ++l) {
    double total = 0, noise = 0;
    for (const BestInLayout& best_in : directions) {
      const CandidateResult* best = best_in(static_cast<Layout>(l));
      total += best != nullptr ? best->median_ms : kCannotRun;
      noise += best != nullptr ? best->spread_ms : 0;
    }
    node.cost_ms[l] = total;
    node.noise_ms[l] = noise;
  }
  return node;
}

}  // namespace

LayoutNode TunedPlanner::layout_node(const ConvProblem& fwd_problem, const LayerEntries& entries) const {
  std::vector<BestInLayout> directions;
  for (Direction dir : kDirections)
    if (const TuningEntry& entry = entries[static_cast<int>(dir)]; !entry.key.empty())
      directions.push_back([this, &entry, problem = fwd_problem.with_dir(dir)](Layout layout) {
        return best_in_layout(entry, conv_subject(problem), layout);
      });
  return summed_node(fwd_problem.src_shape(), directions);
}

LayoutNode TunedPlanner::pool_layout_node(const PoolProblem& fwd_problem, const PoolEntries& entries) const {
  std::vector<BestInLayout> directions;
  for (Direction dir : kPoolDirections)
    if (const TuningEntry& entry = entries[static_cast<int>(dir)]; !entry.key.empty())
      directions.push_back([this, &entry, problem = fwd_problem.with_dir(dir)](Layout layout) {
        return best_in_layout(entry, pool_subject(problem), layout);
      });
  return summed_node(fwd_problem.src_shape(), directions);
}

double TunedPlanner::transform_cost(const Shape& shape, Layout from, Layout to) {
  std::lock_guard lock(mutex_);
  if (from == to) return 0;
  const std::size_t bytes = static_cast<std::size_t>(shape_numel(shape)) * sizeof(float);
  std::optional<double> ms = transform_ms(cache_.thresholds(device_id_), from, to, bytes);
  // Measuring the bandwidths is tuning time too: a spent budget leaves them to a later run.
  if (!ms && policy_ != TunePolicy::off && !budget_spent()) {
    CalibrationOptions calibration;
    calibration.timing = options_;
    calibration.device = section_device(device_id_);
    const double start = has_budget() ? budget_clock_() : 0;
    store_transform_bandwidths(calibrate_transforms(calibration));
    if (has_budget()) budget_spent_ += budget_clock_() - start;
    ms = transform_ms(cache_.thresholds(device_id_), from, to, bytes);
  }
  // Uncalibrated under `off`: a cost so high that layers share a layout wherever they can, yet
  // finite, so a layer fixed in another layout still gets its transform.
  if (!ms) return kUnmeasuredTransformMs;
  return 2 * *ms;  // the activation forward, its gradient backward
}

}  // namespace tunecnn
