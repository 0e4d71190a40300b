// Checkpoints (core/checkpoint.h). The input is a checkpoint without its CRC-32 trailer: the
// target appends the right one, so mutations reach the decoder instead of all stopping at the
// CRC check (which the seeds' plain corruption still exercises: a wrong CRC is just the
// decoder's first check).
#include <zlib.h>

#include <string>

#include "core/checkpoint.h"
#include "core/error.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tunecnn;
  std::string bytes(fuzz::as_text(data, size));
  const auto crc = static_cast<std::uint32_t>(crc32(0L, data, static_cast<uInt>(size)));
  bytes.append(reinterpret_cast<const char*>(&crc), sizeof crc);
  const auto path = fuzz::write_temp("last.ckpt", bytes);
  try {
    const CheckpointData checkpoint = load_checkpoint(path);
    for (const auto& [name, tensor] : checkpoint.tensors) (void)tensor.describe();
  } catch (const Error&) {
  }
  return 0;
}
