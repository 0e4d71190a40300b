#pragma once
// A seeded random number generator whose full state can be saved in a checkpoint, so a resumed
// run draws the same numbers as an uninterrupted one.
#include <cstdint>
#include <random>
#include <string>

namespace tunecnn {

class Rng {
 public:
  explicit Rng(std::uint64_t seed = 0) : engine_(seed) {}
  double uniform(double low = 0.0, double high = 1.0);
  double normal(double mean = 0.0, double stddev = 1.0);
  std::uint64_t next_u64() { return engine_(); }
  std::mt19937_64& engine() { return engine_; }

  std::string state() const;               // text, for checkpoints
  void set_state(const std::string& text);  // throws Error if the text is not a saved state

 private:
  std::mt19937_64 engine_;
};

}  // namespace tunecnn
