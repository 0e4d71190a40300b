#pragma once
// Errors carry their origin and context; library code throws, it never aborts or exits.
#include <sstream>
#include <stdexcept>
#include <string>

namespace tunecnn {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
template <class... Args>
[[noreturn]] void throw_error(const char* file, int line, const char* cond, const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  if (cond != nullptr) out << " [check failed: " << cond << " at " << file << ":" << line << "]";
  throw Error(out.str());
}
}  // namespace detail

}  // namespace tunecnn

// TUNECNN_CHECK(x.ndim() == 4, "conv input must be 4-D, got ", shape_str(x.shape()));
#define TUNECNN_CHECK(cond, ...)                                                   \
  do {                                                                             \
    if (!(cond)) ::tunecnn::detail::throw_error(__FILE__, __LINE__, #cond, __VA_ARGS__); \
  } while (0)

// For failures that are not a violated condition (a bad file, a missing option).
#define TUNECNN_FAIL(...) ::tunecnn::detail::throw_error(__FILE__, __LINE__, nullptr, __VA_ARGS__)
