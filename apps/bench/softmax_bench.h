#pragma once
// `bench softmax`: see the implementation's header comment.
namespace tunecnn {

int bench_softmax(int argc, const char* const* argv);

}  // namespace tunecnn
