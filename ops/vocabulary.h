#pragma once
// The words every op family's problems, solvers and plans share (conv, pool, softmax), kept at
// ops level so that no family includes another's folder for them.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tunecnn {

// Which pass of a layer a problem is: forward, the input's gradient, the weights' gradient.
enum class Direction : std::uint8_t { fwd, bwd_data, bwd_weights };
std::string_view to_string(Direction dir);  // "fwd", "bwd_data", "bwd_weights"

// A solver's tunables, e.g. {{"T", 100}}; empty for solvers without any.
struct TuneConfig {
  std::vector<std::pair<std::string, int>> values;
  int get(std::string_view name, int fallback) const;
  std::string str() const;  // "T=100,S=32", or "" when empty
  bool operator==(const TuneConfig&) const = default;
};

// Whether `config` is one of `configs` (what a solver offers for one problem).
inline bool contains_config(const std::vector<TuneConfig>& configs, const TuneConfig& config) {
  for (const TuneConfig& offered : configs)
    if (offered == config) return true;
  return false;
}

// Fills `why` (when non-null) and returns false: the guard-clause idiom of applicable().
inline bool reject(std::string* why, std::string reason) {
  if (why != nullptr) *why = std::move(reason);
  return false;
}

}  // namespace tunecnn
