#include "core/threading.h"

#include <tbb/global_control.h>
#include <tbb/info.h>

#include <memory>
#include <mutex>

#include "core/error.h"

namespace tunecnn {
namespace {
std::mutex g_mutex;
std::unique_ptr<tbb::global_control> g_control;
}  // namespace

void set_num_threads(int threads) {
  TUNECNN_CHECK(threads >= 0, "thread count must be >= 0 (0 = all cores), got ", threads);
  std::lock_guard lock(g_mutex);
  const int n = threads == 0 ? tbb::info::default_concurrency() : threads;
  g_control = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                    static_cast<std::size_t>(n));
}

int num_threads() {
  return static_cast<int>(
      tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));
}

}  // namespace tunecnn
