#pragma once
// Device calibration: the constants that let `--tune off` decide any conv layer, including shapes
// never profiled, without timing anything. Measured once per device (`autotune calibrate`, or the
// first tuned run that needs them) and kept in the tuning cache beside the device's entries.
//
//   mec_t          MEC's T (PAPERS.md section 1): Solution A when ow <= T. Found by a sweep of ow
//                  on a fixed channel/kernel geometry, timing MEC with T below and above ow.
//   ct, nt         Li et al.'s layout thresholds (PAPERS.md section 2, their Fig. 4): a sweep over
//                  C at small N and over N at large C, timing the best CHWN solver against the best
//                  NCHW one. Rule: C < Ct -> CHWN; else N >= Nt -> CHWN; else NCHW.
//   transform_gbps the bandwidth of each layout transform pair (ops/layout/transform.h).
//
// On the GPU (CalibrationOptions::device = cuda) the same sweeps run the GPU's solvers and
// transforms on device tensors, timed with CUDA events: mec_t from the GPU MEC's two solutions,
// ct and nt from the GPU's direct_chwn against cuDNN (larger sweeps, reaching C and N of 256),
// transform_gbps from the GPU transforms. A device without a CHWN conv solver gets no ct and nt,
// and runs every layer NCHW.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "autotune/conv_tuner.h"
#include "autotune/records.h"
#include "autotune/threshold_plan.h"  // the plan these thresholds make
#include "ops/conv/plan.h"

namespace tunecnn {

struct CalibrationOptions {
  // Timing policy: warmup, min/max repeats, max_seconds, settle and clock are used; the rest is
  // ignored. Calibration must stay under a minute on a 2-core machine with the defaults.
  // On the GPU an empty clock means the CUDA-event clock (device_clock.h).
  TunerOptions timing;
  std::function<void(const std::string&)> progress;  // one line per measured sweep point
  // The device measured: its solvers, its transforms, tensors in its memory. Throws Error for the
  // GPU in a build without CUDA or on a machine without one.
  Device device = Device::cpu;
};

// Measures every threshold of options.device (ct and nt only where it has a CHWN solver).
DeviceThresholds calibrate_device(const CalibrationOptions& options);

// Only the transform bandwidths (well under a second); the layout planner calls this when a
// device has none yet.
std::map<std::string, double> calibrate_transforms(const CalibrationOptions& options);

// "NCHW>CHWN": the key of transform_gbps.
std::string transform_key(Layout from, Layout to);

// Estimated milliseconds for one transform of `bytes` bytes; nullopt when the pair is not
// calibrated. Zero when from == to.
std::optional<double> transform_ms(const DeviceThresholds& thresholds, Layout from, Layout to,
                                   std::size_t bytes);

}  // namespace tunecnn
