#include "tests/support/capture.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <iostream>

namespace tunecnn::testing {

int run_capturing_stdout(BenchCommand command, const char* name, std::vector<const char*> args,
                         std::string* out) {
  args.insert(args.begin(), name);
  ::testing::internal::CaptureStdout();
  int rc = -1;
  try {
    rc = command(static_cast<int>(args.size()), args.data());
  } catch (...) {
    ::testing::internal::GetCapturedStdout();
    throw;
  }
  std::cout.flush();
  const std::string text = ::testing::internal::GetCapturedStdout();
  if (out) *out = text;
  return rc;
}

std::vector<std::uint8_t> gzip_bytes(const std::vector<std::uint8_t>& bytes) {
  z_stream stream{};
  EXPECT_EQ(deflateInit2(&stream, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::vector<std::uint8_t> out(deflateBound(&stream, bytes.size()));
  stream.next_in = const_cast<std::uint8_t*>(bytes.data());
  stream.avail_in = static_cast<uInt>(bytes.size());
  stream.next_out = out.data();
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

}  // namespace tunecnn::testing
