#pragma once
// The progress line of a training epoch. On a terminal it redraws one line in place; otherwise
// (a log file, CI) it prints a plain line every few seconds so logs stay readable.
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>

namespace tunecnn {

class Progress {
 public:
  Progress(std::ostream& out, bool enabled, bool terminal);
  void start_epoch(int epoch, int epochs, std::int64_t batches, std::int64_t first_batch);
  // After batch `done` (1-based) of the epoch, with running averages.
  void update(std::int64_t done, double loss, double accuracy, double images_per_s);
  void finish();  // ends a redrawn line

 private:
  std::ostream& out_;
  bool enabled_, terminal_;
  int epoch_ = 0, epochs_ = 0;
  std::int64_t batches_ = 0, first_batch_ = 0;
  std::chrono::steady_clock::time_point start_, last_print_;
  bool line_open_ = false;
};

std::string format_duration(double seconds);  // "1:05:09", "4:02"

}  // namespace tunecnn
