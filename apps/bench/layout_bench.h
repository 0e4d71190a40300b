#pragma once
// `bench layout`: see the implementation's header comment.
namespace tunecnn {

int bench_layout(int argc, const char* const* argv);

}  // namespace tunecnn
