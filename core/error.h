#pragma once
// Errors carry their origin and context; library code throws, it never aborts or exits.
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tunecnn {

// what() is the message plus, for a failed check, where it failed; message() alone is what a
// command-line user needs to read.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, const std::string& location = "")
      : std::runtime_error(location.empty() ? message : message + " [" + location + "]"),
        message_(message) {}
  const std::string& message() const { return message_; }

 private:
  std::string message_;
};

// Text read from a file, fit to quote in a message: control bytes (an escape sequence in a garbage
// file would otherwise drive the user's terminal) are written as \xNN.
inline std::string printable(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const char ch : text) {
    const auto byte = static_cast<unsigned char>(ch);
    if (byte >= 0x20 && byte != 0x7f) {
      out += ch;
    } else {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    }
  }
  return out;
}

// The message of any exception, without a tunecnn::Error's source location.
inline std::string user_message(const std::exception& e) {
  if (const auto* error = dynamic_cast<const Error*>(&e)) return error->message();
  return e.what();
}

namespace detail {
template <class... Args>
[[noreturn]] void throw_error(const char* file, int line, const char* cond, const Args&... args) {
  std::ostringstream out, where;
  (out << ... << args);
  if (cond != nullptr) where << "check failed: " << cond << " at " << file << ":" << line;
  throw Error(out.str(), where.str());
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
