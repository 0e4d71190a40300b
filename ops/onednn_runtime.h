#pragma once
// What every oneDNN solver shares (built only with oneDNN, cmake/onednn.cmake): the CPU engine,
// the thread count set before each call, the cache of built primitives and the padding rule.
#include <dnnl.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "core/error.h"

namespace tunecnn {

const dnnl::engine& onednn_cpu_engine();

// Debian's oneDNN runs on OpenMP, we run on TBB: OpenMP's team as wide as TBB's arena, set on the
// calling thread, whose setting oneDNN reads. apps/common/openmp_wait.h keeps OpenMP's threads
// from spinning on the cores between calls.
void match_onednn_threads_to_ours();

// The padding after the input as oneDNN counts it: what the last window reaches past the input.
// Ours is floor mode with `before` on both sides, so this may be less than `before`.
inline int onednn_pad_after(int in, int out, int kernel, int stride, int before) {
  return (out - 1) * stride + kernel - in - before;
}

// Primitives built once per key for the life of the process (JIT code generation takes
// milliseconds), so a plan runs the same primitive every step. `build` runs under the lock, once
// per key; a dnnl::error it throws becomes an Error starting with `what`.
template <class Built>
class OneDnnPrimitiveCache {
 public:
  template <class Build>
  const Built& get(const std::string& key, Build&& build, std::string_view what) {
    std::lock_guard lock(mutex_);
    auto it = built_.find(key);
    if (it == built_.end()) {
      try {
        it = built_.emplace(key, build()).first;
      } catch (const dnnl::error& e) {
        TUNECNN_FAIL(what, ": ", e.what());
      }
    }
    return *it->second;
  }
  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return built_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Built>> built_;
};

}  // namespace tunecnn
