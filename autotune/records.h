#pragma once
// What the tuner measures and the tuning cache keeps: plain values shared by both, so the tuner
// never depends on the file format and the cache never depends on how timings are taken.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ops/conv/solver.h"

namespace tunecnn {

// One solver x config x layout tried on one problem.
struct CandidateResult {
  std::string solver;  // the solver's stable name()
  TuneConfig config;
  Layout layout = Layout::NCHW;
  double median_ms = 0, spread_ms = 0;  // spread: (max - min) / 2 over the timed runs
  int runs = 0;
  std::size_t workspace_bytes = 0;
  bool correct = true;  // false: it disagreed with the reference and was disqualified
  bool deterministic = true;  // ConvSolver::deterministic; the cache writes only false
  bool operator==(const CandidateResult&) const = default;
};

// Where a decision came from.
struct Provenance {
  std::string host, date, version;  // date: ISO 8601 UTC
  bool operator==(const Provenance&) const = default;
};

// The decision for one problem key and every candidate behind it.
struct TuningEntry {
  std::string key;  // ConvProblem::key() (later pooling, softmax and depthwise keys)
  std::string solver;
  TuneConfig config;
  Layout layout = Layout::NCHW;
  std::vector<CandidateResult> candidates;
  Provenance provenance;
  // The search stopped at the tuning budget (--tune-budget) before trying every candidate: the
  // run uses it, but it is never stored, so a later run tunes the key in full.
  bool partial = false;
  bool operator==(const TuningEntry&) const = default;
};

// Device constants measured once by calibration (autotune/calibration.h); absent until measured.
struct DeviceThresholds {
  std::optional<int> mec_t;   // MEC's T
  std::optional<int> ct, nt;  // Li et al.'s layout thresholds
  // Measured layout-transform bandwidth in GB/s (bytes read + written per second), keyed
  // "FROM>TO", e.g. "NCHW>CHWN"; what the layout planner charges for a transform.
  std::map<std::string, double> transform_gbps;
  bool operator==(const DeviceThresholds&) const = default;
};

// One device's section of the cache. `fingerprint` holds the fields that make timings
// comparable (name -> value); `id` is a stable digest of them.
struct DeviceRecord {
  std::string id;
  std::map<std::string, std::string> fingerprint;
  DeviceThresholds thresholds;
  std::map<std::string, TuningEntry> entries;  // by key
  // "YYYY-MM-DD" (UTC): the last day a run looked up or stored entries of this device, which is
  // what `autotune prune` ages sections by. Empty: unknown (a cache written before the field).
  std::string last_used;
  bool operator==(const DeviceRecord&) const = default;
};

}  // namespace tunecnn
