#pragma once
// `bench pool`: see the implementation's header comment.
namespace tunecnn {

int bench_pool(int argc, const char* const* argv);

}  // namespace tunecnn
