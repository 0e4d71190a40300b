#pragma once
// The process's resident set from /proc/self/status, and a reset of its peak (VmHWM) through
// /proc/self/clear_refs, so a bench can measure the peak of one phase of a run on Linux.
#include <cstddef>
#include <optional>

namespace tunecnn {

// A "Vm..." field of /proc/self/status in bytes ("VmRSS", "VmHWM"); nullopt where unreadable.
std::optional<std::size_t> process_status_bytes(const char* field);

// Sets the peak resident set (VmHWM) to the current one; false where the kernel refuses.
bool reset_peak_resident_set();

}  // namespace tunecnn
