// Writing the tuning cache as YAML text (TuningCache::to_yaml): block style in a fixed order,
// doubles in their shortest exact form, and the end marker last. Reading it back is in
// tuning_cache_parse.cpp.
#include "autotune/tuning_cache.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <string>
#include <string_view>

#include "autotune/tuning_cache_format.h"
#include "core/error.h"
#include "core/types.h"

namespace tunecnn {
namespace {

// Shortest text that reads back to the same double: exact round trips without 17-digit noise.
std::string format_double(double value) {
  if (std::isnan(value)) return ".nan";
  if (std::isinf(value)) return value > 0 ? ".inf" : "-.inf";
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

// An empty map goes on its key's line ("config: {}") rather than alone on the next.
void begin_map(YAML::Emitter& out, bool empty) {
  if (empty) out << YAML::Flow;
  out << YAML::BeginMap;
}

void emit_config(YAML::Emitter& out, const TuneConfig& config) {
  begin_map(out, config.values.empty());
  for (const auto& [name, value] : config.values) out << YAML::Key << name << YAML::Value << value;
  out << YAML::EndMap;
}

void emit_candidate(YAML::Emitter& out, const CandidateResult& c) {
  out << YAML::BeginMap;
  out << YAML::Key << "solver" << YAML::Value << c.solver;
  out << YAML::Key << "config" << YAML::Value;
  emit_config(out, c.config);
  out << YAML::Key << "layout" << YAML::Value << std::string(to_string(c.layout));
  out << YAML::Key << "median_ms" << YAML::Value << format_double(c.median_ms);
  out << YAML::Key << "spread_ms" << YAML::Value << format_double(c.spread_ms);
  out << YAML::Key << "runs" << YAML::Value << c.runs;
  out << YAML::Key << "workspace_bytes" << YAML::Value << c.workspace_bytes;
  out << YAML::Key << "correct" << YAML::Value << c.correct;
  if (!c.deterministic) out << YAML::Key << "deterministic" << YAML::Value << false;
  out << YAML::EndMap;
}

void emit_entry(YAML::Emitter& out, const TuningEntry& e) {
  out << YAML::BeginMap;
  out << YAML::Key << "key" << YAML::Value << e.key;
  out << YAML::Key << "choice" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "solver" << YAML::Value << e.solver;
  out << YAML::Key << "config" << YAML::Value;
  emit_config(out, e.config);
  out << YAML::Key << "layout" << YAML::Value << std::string(to_string(e.layout));
  out << YAML::EndMap;
  out << YAML::Key << "candidates" << YAML::Value << YAML::BeginSeq;
  for (const CandidateResult& c : e.candidates) emit_candidate(out, c);
  out << YAML::EndSeq;
  out << YAML::Key << "provenance" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "host" << YAML::Value << e.provenance.host;
  out << YAML::Key << "date" << YAML::Value << e.provenance.date;
  out << YAML::Key << "version" << YAML::Value << e.provenance.version;
  out << YAML::EndMap;
  out << YAML::EndMap;
}

void emit_thresholds(YAML::Emitter& out, const DeviceThresholds& t) {
  begin_map(out, !t.mec_t && !t.ct && !t.nt && t.transform_gbps.empty());
  if (t.mec_t) out << YAML::Key << "mec_t" << YAML::Value << *t.mec_t;
  if (t.ct) out << YAML::Key << "ct" << YAML::Value << *t.ct;
  if (t.nt) out << YAML::Key << "nt" << YAML::Value << *t.nt;
  if (!t.transform_gbps.empty()) {
    out << YAML::Key << "transform_gbps" << YAML::Value << YAML::BeginMap;
    for (const auto& [pair, gbps] : t.transform_gbps)
      out << YAML::Key << pair << YAML::Value << format_double(gbps);
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
}

void emit_device(YAML::Emitter& out, const DeviceRecord& d) {
  out << YAML::BeginMap;
  out << YAML::Key << "id" << YAML::Value << d.id;
  out << YAML::Key << "fingerprint" << YAML::Value;
  begin_map(out, d.fingerprint.empty());
  for (const auto& [name, value] : d.fingerprint) out << YAML::Key << name << YAML::Value << value;
  out << YAML::EndMap;
  if (!d.last_used.empty()) out << YAML::Key << "last_used" << YAML::Value << d.last_used;
  out << YAML::Key << "thresholds" << YAML::Value;
  emit_thresholds(out, d.thresholds);
  out << YAML::Key << "entries" << YAML::Value << YAML::BeginSeq;
  for (const auto& [key, entry] : d.entries) emit_entry(out, entry);
  out << YAML::EndSeq;
  out << YAML::EndMap;
}

}  // namespace

std::string TuningCache::to_yaml() const {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "format" << YAML::Value << std::string(kTuningCacheFormat);
  out << YAML::Key << "version" << YAML::Value << kTuningCacheVersion;
  out << YAML::Key << "devices" << YAML::Value << YAML::BeginSeq;
  for (const auto& [id, device] : devices_) emit_device(out, device);
  out << YAML::EndSeq;
  out << YAML::EndMap;
  TUNECNN_CHECK(out.good(), "emitting the tuning cache failed: ", out.GetLastError());
  return std::string(out.c_str()) + "\n" + std::string(kTuningCacheEndMarker) + "\n";
}

}  // namespace tunecnn
