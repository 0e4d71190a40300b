#pragma once
// `bench plans`: the autotuner's measured targets for one model and batch, in one run.
//   - the profiling pass on an empty cache, in training steps of the tuned plan;
//   - a fully cached start (load the cache, plan every layer): its wall time;
//   - training-step time of the tuned plan against every single conv algorithm forced on all
//     layers (each in its best tuned config; layers it cannot run use the tuned choice), timed
//     side by side in interleaved rounds, medians and ratios; and against the tuned plan with
//     every layer held in NCHW (what mixed layouts gain once transforms are paid);
//   - `--tune verify` under a changed fingerprint: candidates re-timed per key.
namespace tunecnn {

int bench_plans(int argc, const char* const* argv);

}  // namespace tunecnn
