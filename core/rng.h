#pragma once
// A seeded random number generator whose full state can be saved in a checkpoint, so a resumed
// run draws the same numbers as an uninterrupted one.
#include <cstdint>
#include <random>
#include <string>

namespace tunecnn {

// SplitMix64's step: a cheap, well-spread 64-bit hash, for values that must follow from a key
// alone (a shuffle's seed per epoch, an augmentation draw per example) on any build.
inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

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
