// Linked into every target of a ThreadSanitizer build (cmake/tsan.cmake): TBB at one thread, so
// no TBB worker runs our code. Debian's libtbb is not instrumented, and ThreadSanitizer would
// report a task's accesses as racing with those of the thread that spawned or waited for it.
// With several global_control objects alive TBB obeys the smallest, so the programs' own
// set_num_threads() cannot raise it (and num_threads() answers 1).
#include <tbb/global_control.h>

namespace {
const tbb::global_control one_tbb_thread(tbb::global_control::max_allowed_parallelism, 1);
}  // namespace
