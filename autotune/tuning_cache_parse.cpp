// Reading the tuning cache's YAML text (parse_tuning_cache): the checks that decide whether the
// file as a whole is usable, and the per-value checks that skip one bad entry, threshold or
// bandwidth with a warning. Writing it is in tuning_cache_emit.cpp.
//
// Two readers give the document: the fast one for the layout the cache is written in
// (tuning_cache_read_fast.cpp), and yaml-cpp for any other text. The checks below are templates
// over the node type (YamlNode or YamlCppView), so both documents meet the same code.
#include "autotune/tuning_cache.h"

#include <cmath>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "autotune/tuning_cache_format.h"
#include "autotune/yaml_cpp_view.h"
#include "autotune/yaml_node.h"
#include "core/error.h"
#include "core/types.h"

namespace tunecnn {
namespace {

// Field access that fails with the field's name: these messages end up in user warnings.
template <class Node>
decltype(auto) field(const Node& map, const char* name) {
  decltype(auto) value = map.child(name);
  if (!value.defined()) TUNECNN_FAIL("missing '", name, "'");
  return value;
}

template <class Node>
void require_map(const Node& node, const char* what) {
  if (!node.is_map()) TUNECNN_FAIL("'", what, "' is not a map");
}

// Every value read from the file goes through here. One holding control bytes is refused: the
// cache writes none, and `autotune show` would print them to the terminal.
template <class T, class Node>
T scalar_as(const Node& node, const char* name) {
  if (!node.is_scalar()) TUNECNN_FAIL("'", name, "' is not a scalar");
  const std::string& text = node.scalar();
  if (printable(text) != text) TUNECNN_FAIL("'", name, "' holds control characters: '", printable(text), "'");
  std::optional<T> value = node.template as<T>();
  if (!value) TUNECNN_FAIL("'", name, "' has a bad value '", text, "'");
  return std::move(*value);
}

template <class T, class Node>
T scalar(const Node& map, const char* name) {
  return scalar_as<T>(field(map, name), name);
}

template <class Node>
TuneConfig parse_config(const Node& node) {
  TuneConfig config;
  if (node.is_null()) return config;
  require_map(node, "config");
  for (const auto& item : node.pairs()) {
    const auto name = scalar_as<std::string>(item.first, "config name");
    config.values.emplace_back(name, scalar_as<int>(item.second, "config value"));
  }
  return config;
}

template <class Node>
Layout parse_layout_field(const Node& map) {
  const auto text = scalar<std::string>(map, "layout");
  try {
    return parse_layout(text);
  } catch (const Error&) {
    TUNECNN_FAIL("unknown layout '", text, "'");
  }
}

template <class Node>
CandidateResult parse_candidate(const Node& node) {
  require_map(node, "candidate");
  CandidateResult c;
  c.solver = scalar<std::string>(node, "solver");
  c.config = parse_config(field(node, "config"));
  c.layout = parse_layout_field(node);
  c.median_ms = scalar<double>(node, "median_ms");
  c.spread_ms = scalar<double>(node, "spread_ms");
  c.runs = scalar<int>(node, "runs");
  c.workspace_bytes = scalar<std::size_t>(node, "workspace_bytes");
  c.correct = scalar<bool>(node, "correct");
  // Absent in caches written before the field and for every deterministic candidate.
  if (node.child("deterministic").defined()) c.deterministic = scalar<bool>(node, "deterministic");
  if (c.runs < 0) TUNECNN_FAIL("candidate ", c.solver, " has negative runs");
  // A negative time would make the planner pick the slowest candidate, and a NaN one fail to
  // compare: the entry is skipped and profiled again instead.
  for (const char* name : {"median_ms", "spread_ms"}) {
    const double ms = name == std::string_view("median_ms") ? c.median_ms : c.spread_ms;
    if (!std::isfinite(ms) || ms < 0)
      TUNECNN_FAIL("candidate ", c.solver, " has ", name, " ", node.child(name).scalar(), " (needs a finite time >= 0)");
  }
  return c;
}

// Throws Error naming the problem; the caller skips the entry. Only the chosen solver must be
// known: a candidate of a solver this build lacks is still a fair record of what was measured.
template <class Node>
TuningEntry parse_entry(const Node& node, const SolverFilter& known) {
  require_map(node, "entry");
  TuningEntry e;
  e.key = scalar<std::string>(node, "key");
  if (e.key.empty()) TUNECNN_FAIL("empty key");
  const auto& choice = field(node, "choice");
  require_map(choice, "choice");
  e.solver = scalar<std::string>(choice, "solver");
  if (!known(e.solver)) TUNECNN_FAIL("unknown solver '", e.solver, "'");
  e.config = parse_config(field(choice, "config"));
  e.layout = parse_layout_field(choice);
  const auto& candidates = field(node, "candidates");
  if (!candidates.is_sequence() && !candidates.is_null()) TUNECNN_FAIL("'candidates' is not a list");
  for (const auto& c : candidates.items()) e.candidates.push_back(parse_candidate(c));
  const auto& provenance = field(node, "provenance");
  require_map(provenance, "provenance");
  e.provenance.host = scalar<std::string>(provenance, "host");
  e.provenance.date = scalar<std::string>(provenance, "date");
  e.provenance.version = scalar<std::string>(provenance, "version");
  return e;
}

// "FROM>TO" with two different layouts, spelled as to_string spells them (parse_layout is exact).
void check_transform_pair(const std::string& pair) {
  const auto arrow = pair.find('>');
  bool known = false;
  if (arrow != std::string::npos) {
    try {
      known = parse_layout(pair.substr(0, arrow)) != parse_layout(pair.substr(arrow + 1));
    } catch (const Error&) {
    }
  }
  if (!known) TUNECNN_FAIL("unknown layout pair '", pair, "' (expected e.g. NCHW>CHWN)");
}

template <class Node>
double parse_gbps(const Node& node) {
  const auto gbps = scalar_as<double>(node, "transform_gbps value");
  if (!std::isfinite(gbps) || gbps < 0)
    TUNECNN_FAIL("bad bandwidth '", printable(node.scalar()), "' (needs a finite number >= 0)");
  return gbps;
}

// Each bad pair is dropped with a warning; the rest of the device stays usable, since a missing
// bandwidth only means the planner calibrates it again.
template <class Node>
std::map<std::string, double> parse_transform_gbps(const Node& node, const std::string& where,
                                                   std::vector<std::string>& warnings) {
  std::map<std::string, double> out;
  if (!node.defined() || node.is_null()) return out;
  if (!node.is_map()) {
    warnings.push_back(where + ": skipped 'transform_gbps': not a map");
    return out;
  }
  for (const auto& item : node.pairs()) {
    const std::string pair = item.first.is_scalar() ? printable(item.first.scalar()) : "?";
    try {
      check_transform_pair(pair);
      out[pair] = parse_gbps(item.second);
    } catch (const std::exception& e) {
      warnings.push_back(where + ": skipped transform_gbps '" + pair + "': " + user_message(e));
    }
  }
  return out;
}

template <class Node>
DeviceThresholds parse_thresholds(const Node& node, const std::string& where,
                                  std::vector<std::string>& warnings) {
  DeviceThresholds t;
  if (!node.defined() || node.is_null()) return t;
  require_map(node, "thresholds");
  if (node.child("mec_t").defined()) t.mec_t = scalar<int>(node, "mec_t");
  if (node.child("ct").defined()) t.ct = scalar<int>(node, "ct");
  if (node.child("nt").defined()) t.nt = scalar<int>(node, "nt");
  t.transform_gbps = parse_transform_gbps(node.child("transform_gbps"), where, warnings);
  return t;
}

// "the entry 'KEY'" when the key can be read, else its position: for warnings.
template <class Node>
std::string entry_name(const Node& node, std::size_t index) {
  if (node.is_map() && node.child("key").defined() && node.child("key").is_scalar())
    return "entry '" + printable(node.child("key").scalar()) + "'";
  return "entry #" + std::to_string(index + 1);
}

template <class Node>
void parse_entries(const Node& entries, DeviceRecord& device, const std::string& where,
                   std::vector<std::string>& warnings, const SolverFilter& known) {
  if (!entries.defined() || entries.is_null()) return;
  if (!entries.is_sequence()) TUNECNN_FAIL("'entries' is not a list");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& node = entries.at(i);
    try {
      TuningEntry entry = parse_entry(node, known);
      if (device.entries.count(entry.key)) TUNECNN_FAIL("a second entry with the same key");
      std::string key = entry.key;
      device.entries.emplace(std::move(key), std::move(entry));
    } catch (const std::exception& e) {
      warnings.push_back(where + ": skipped " + entry_name(node, i) + ": " + user_message(e));
    }
  }
}

bool is_iso_date(const std::string& text) {
  if (text.size() != 10 || text[4] != '-' || text[7] != '-') return false;
  for (std::size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (text[i] < '0' || text[i] > '9') return false;
  return true;
}

// Absent in caches written before the field: unknown. A bad date is only bookkeeping, so it is
// dropped with a warning rather than costing the section.
template <class Node>
std::string parse_last_used(const Node& node, const std::string& where,
                            std::vector<std::string>& warnings) {
  if (!node.defined() || node.is_null()) return "";
  try {
    const auto date = scalar_as<std::string>(node, "last_used");
    if (is_iso_date(date)) return date;
    TUNECNN_FAIL("bad date '", date, "' (expected YYYY-MM-DD)");
  } catch (const std::exception& e) {
    warnings.push_back(where + ": ignored 'last_used': " + user_message(e));
  }
  return "";
}

// Throws Error for a device section that cannot be read at all; the caller skips it.
template <class Node>
DeviceRecord parse_device(const Node& node, const std::string& source,
                          std::vector<std::string>& warnings, const SolverFilter& known) {
  require_map(node, "device");
  DeviceRecord device;
  device.id = scalar<std::string>(node, "id");
  if (device.id.empty()) TUNECNN_FAIL("empty device id");
  const auto& fingerprint = field(node, "fingerprint");
  require_map(fingerprint, "fingerprint");
  for (const auto& item : fingerprint.pairs())
    device.fingerprint[scalar_as<std::string>(item.first, "fingerprint field")] =
        scalar_as<std::string>(item.second, "fingerprint value");
  const std::string where = source + ", device " + device.id;
  device.last_used = parse_last_used(node.child("last_used"), where, warnings);
  device.thresholds = parse_thresholds(node.child("thresholds"), where, warnings);
  parse_entries(node.child("entries"), device, where, warnings, known);
  return device;
}

bool ends_with_marker(std::string_view text) {
  const auto end = text.find_last_not_of(" \t\r\n");
  if (end == std::string_view::npos) return false;
  text = text.substr(0, end + 1);
  return text.size() >= kTuningCacheEndMarker.size() &&
         text.substr(text.size() - kTuningCacheEndMarker.size()) == kTuningCacheEndMarker;
}

// The checks that decide whether the file as a whole is usable.
template <class Node>
void check_header(const Node& root, std::string_view text) {
  if (!root.is_map()) TUNECNN_FAIL("not a tunecnn tuning cache (not a YAML map)");
  const auto& format = root.child("format");
  if (!format.defined() || !format.is_scalar() || format.scalar() != kTuningCacheFormat)
    TUNECNN_FAIL("not a tunecnn tuning cache (format is '",
                 format.defined() && format.is_scalar() ? printable(format.scalar()) : std::string("missing"),
                 "', expected '", kTuningCacheFormat, "')");
  const int version = scalar<int>(root, "version");
  if (version > kTuningCacheVersion)
    TUNECNN_FAIL("written by a newer tunecnn (format version ", version, ", this build reads ",
                 kTuningCacheVersion, ")");
  if (version < 1) TUNECNN_FAIL("bad format version ", version);
  if (!ends_with_marker(text)) TUNECNN_FAIL("truncated (the end marker is missing)");
}

template <class Node>
TuningCache parse_document(const Node& root, std::string_view text, const std::string& source,
                           std::vector<std::string>& warnings, const SolverFilter& known) {
  try {
    check_header(root, text);
  } catch (const std::exception& e) {
    TUNECNN_FAIL(source, ": ", user_message(e));
  }
  const auto& devices = root.child("devices");
  if (devices.defined() && !devices.is_null() && !devices.is_sequence())
    TUNECNN_FAIL(source, ": 'devices' is not a list");
  TuningCache cache;
  if (!devices.defined() || devices.is_null()) return cache;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    try {
      DeviceRecord device = parse_device(devices.at(i), source, warnings, known);
      if (cache.devices().count(device.id)) TUNECNN_FAIL("a second section for ", device.id);
      cache.put_device(std::move(device));
    } catch (const std::exception& e) {
      warnings.push_back(source + ": skipped device #" + std::to_string(i + 1) + ": " +
                         user_message(e));
    }
  }
  return cache;
}

}  // namespace

TuningCache parse_tuning_cache(std::string_view text, const std::string& source,
                               std::vector<std::string>& warnings, const SolverFilter& known) {
  return parse_tuning_cache_with(TuningCacheReader::fastest, text, source, warnings, known);
}

TuningCache parse_tuning_cache_with(TuningCacheReader reader, std::string_view text, const std::string& source,
                                   std::vector<std::string>& warnings, const SolverFilter& known) {
  if (reader == TuningCacheReader::fastest)
    if (const std::optional<YamlNode> root = read_emitted_yaml(text))
      return parse_document(*root, text, source, warnings, known);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    TUNECNN_FAIL(source, ": corrupt or truncated YAML: ", printable(e.what()));
  }
  return parse_document(YamlCppView(root), text, source, warnings, known);
}

}  // namespace tunecnn
