#pragma once
// `bench data`: the input pipeline alone. Builds a data set as `train --data` does and times a
// DataLoader serving batches that nobody consumes: the rate the pipeline can feed training at.
namespace tunecnn {

// argv[0] is "data"; returns the exit status.
int bench_data(int argc, const char* const* argv);

}  // namespace tunecnn
