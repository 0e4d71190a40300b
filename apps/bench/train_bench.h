#pragma once
// `bench train`: times whole training steps of a model on a fixed random batch (no data loading)
// and prints the median; under mpirun, data-parallel steps on each process's share of the batch,
// with the allreduce's bytes and wait per step that `bench scaling` reads.
namespace tunecnn {

// argv[0] is "train"; returns the exit status.
int bench_train(int argc, const char* const* argv);

}  // namespace tunecnn
