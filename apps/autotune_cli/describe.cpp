#include "apps/autotune_cli/describe.h"

#include <iomanip>
#include <sstream>

namespace tunecnn {
namespace {

std::string field(const std::map<std::string, std::string>& fields, const std::string& name) {
  const auto it = fields.find(name);
  return it == fields.end() ? "?" : it->second;
}

// A GPU's fingerprint (autotune/gpu_fingerprint.h) has its own fields; sm_count marks one.
std::string gpu_summary(const std::map<std::string, std::string>& fields) {
  return field(fields, "name") + ", " + field(fields, "sm_count") + " SMs, compute " +
         field(fields, "compute_capability") + "; CUDA " + field(fields, "cuda_runtime") +
         ", cuBLAS " + field(fields, "cublas") + ", cuDNN " + field(fields, "cudnn") +
         "; tunecnn " + field(fields, "framework_version");
}

}  // namespace

std::string fingerprint_summary(const std::map<std::string, std::string>& fields) {
  if (fields.count("sm_count")) return gpu_summary(fields);
  return field(fields, "model") + ", " + field(fields, "threads_used") + "/" +
         field(fields, "hardware_threads") + " threads, ISA " + field(fields, "isa") + "; " +
         field(fields, "blas") + (fields.count("onednn") ? "; oneDNN " + field(fields, "onednn") : "") +
         "; tunecnn " + field(fields, "framework_version");
}

std::string thresholds_summary(const DeviceThresholds& t) {
  std::ostringstream out;
  const auto item = [&](const char* name, const std::optional<int>& value) {
    if (value) out << (out.tellp() > 0 ? ", " : "") << name << " " << *value;
  };
  item("mec_t", t.mec_t);
  item("ct", t.ct);
  item("nt", t.nt);
  if (!t.transform_gbps.empty()) {
    out << (out.tellp() > 0 ? ", " : "") << "transform_gbps";
    out << std::setprecision(3);  // GB/s measured to a few percent; more digits are noise
    for (const auto& [pair, gbps] : t.transform_gbps) out << " " << pair << " " << gbps;
  }
  return out.tellp() > 0 ? out.str() : "not calibrated";
}

std::string config_text(const TuneConfig& config) {
  return config.values.empty() ? "-" : config.str();
}

std::string choice_summary(const std::string& solver, const TuneConfig& config, Layout layout) {
  return solver + " " + config_text(config) + " " + std::string(to_string(layout));
}

long total_runs(const TuningEntry& entry) {
  long runs = 0;
  for (const CandidateResult& c : entry.candidates) runs += c.runs;
  return runs;
}

const CandidateResult* chosen_candidate(const TuningEntry& entry) {
  for (const CandidateResult& c : entry.candidates)
    if (c.solver == entry.solver && c.config == entry.config && c.layout == entry.layout) return &c;
  return nullptr;
}

}  // namespace tunecnn
