#pragma once
// One-line descriptions of the cache's records, shared by show, explain, merge and diff.
#include <map>
#include <string>

#include "autotune/records.h"

namespace tunecnn {

// "Intel Xeon ..., 2/2 threads, ISA avx2 fma; OpenBLAS ...; tunecnn 0.1.0" from stored fields.
std::string fingerprint_summary(const std::map<std::string, std::string>& fields);
// "mec_t 96, ct 32, nt 128, transform_gbps NCHW>CHWN 3.1 ..." or "not calibrated".
std::string thresholds_summary(const DeviceThresholds& thresholds);
// "mec chunk=4,T=96 NHWC"; "(none)" for an empty config so words stay aligned in columns
std::string config_text(const TuneConfig& config);
std::string choice_summary(const std::string& solver, const TuneConfig& config, Layout layout);
// Candidate runs summed: what merge() calls better measured.
long total_runs(const TuningEntry& entry);
// The candidate the entry chose; nullptr when the entry does not list it.
const CandidateResult* chosen_candidate(const TuningEntry& entry);

}  // namespace tunecnn
