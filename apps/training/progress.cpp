#include "apps/training/progress.h"

#include <cstdio>
#include <ostream>

namespace tunecnn {
namespace {
constexpr double kPlainInterval = 5.0;     // seconds between lines when not on a terminal
constexpr double kTerminalInterval = 0.1;  // redraws per second on a terminal
}  // namespace

std::string format_duration(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

Progress::Progress(std::ostream& out, bool enabled, bool terminal)
    : out_(out), enabled_(enabled), terminal_(terminal) {}

void Progress::start_epoch(int epoch, int epochs, std::int64_t batches, std::int64_t first_batch) {
  epoch_ = epoch, epochs_ = epochs, batches_ = batches, first_batch_ = first_batch;
  start_ = last_print_ = std::chrono::steady_clock::now();
}

void Progress::update(std::int64_t done, double loss, double accuracy, double images_per_s) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_print_).count();
  const bool last = done == batches_;
  if (!last && since < (terminal_ ? kTerminalInterval : kPlainInterval)) return;
  last_print_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double per_batch = elapsed / static_cast<double>(std::max<std::int64_t>(done - first_batch_, 1));
  char line[256];
  std::snprintf(line, sizeof line, "epoch %d/%d  batch %lld/%lld  loss %.4f  acc %.2f%%  %.0f img/s  ETA %s",
                epoch_, epochs_, static_cast<long long>(done), static_cast<long long>(batches_), loss,
                100 * accuracy, images_per_s,
                format_duration(per_batch * static_cast<double>(batches_ - done)).c_str());
  if (terminal_) {
    out_ << "\r\033[K" << line << std::flush;
    line_open_ = true;
  } else {
    out_ << line << "\n" << std::flush;
  }
}

void Progress::finish() {
  if (line_open_) out_ << "\n";
  line_open_ = false;
}

}  // namespace tunecnn
