#pragma once
// The versions of the vendor libraries our CPU solvers call, for the tuning cache's fingerprint:
// a cached oneDNN config names an implementation by its place in that version's list.
#include <string>

namespace tunecnn {

// "2.6.3"; empty in a build without oneDNN.
std::string onednn_version();

}  // namespace tunecnn
