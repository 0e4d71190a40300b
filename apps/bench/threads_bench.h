#pragma once
// `bench threads`: whether oneDNN's OpenMP team and our TBB pool share the cores well. Per layer,
// one of our solvers and oneDNN's first implementation are timed each alone (back to back) and
// then alternating call by call, as a plan that mixes them runs; a call that slows down when the
// other pool ran just before (threads still spinning, or sleeping and slow to wake) shows as an
// alternating median above the alone one.
namespace tunecnn {

// argv[0] is "threads"; returns the exit status.
int bench_threads(int argc, const char* const* argv);

}  // namespace tunecnn
