#pragma once
// `bench scaling`: how well data-parallel training scales on this machine. Runs `bench train`
// under mpirun with each process count P of --procs, round after round, and prints per P the
// global batch, the median images/s over the rounds with its range, the speedup over one process,
// the scaling efficiency (speedup / P), and what the gradient allreduce sends and waits per step.
namespace tunecnn {

// argv[0] is "scaling"; returns the exit status (2 when the build has no MPI).
int bench_scaling(int argc, const char* const* argv);

}  // namespace tunecnn
