#include "autotune/tuning_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/types.h"
#include "ops/conv/registry.h"
#include "ops/pool/registry.h"
#include "ops/softmax/registry.h"

namespace tunecnn {
namespace fs = std::filesystem;

// ---- the in-memory cache ----

DeviceRecord& TuningCache::device_section(const std::string& device_id,
                                          const std::map<std::string, std::string>& fingerprint) {
  DeviceRecord& device = devices_[device_id];
  device.id = device_id;
  if (device.fingerprint.empty()) device.fingerprint = fingerprint;
  return device;
}

const TuningEntry* TuningCache::find(const std::string& device_id, const std::string& key) const {
  const auto device = devices_.find(device_id);
  if (device == devices_.end()) return nullptr;
  const auto entry = device->second.entries.find(key);
  return entry == device->second.entries.end() ? nullptr : &entry->second;
}

void TuningCache::put(const std::string& device_id,
                      const std::map<std::string, std::string>& fingerprint, TuningEntry entry) {
  TUNECNN_CHECK(!entry.key.empty(), "a tuning entry needs a key");
  std::string key = entry.key;
  device_section(device_id, fingerprint).entries[std::move(key)] = std::move(entry);
}

DeviceThresholds TuningCache::thresholds(const std::string& device_id) const {
  const auto device = devices_.find(device_id);
  return device == devices_.end() ? DeviceThresholds{} : device->second.thresholds;
}

void TuningCache::set_thresholds(const std::string& device_id,
                                 const std::map<std::string, std::string>& fingerprint,
                                 const DeviceThresholds& thresholds) {
  device_section(device_id, fingerprint).thresholds = thresholds;
}

void TuningCache::put_device(DeviceRecord device) {
  TUNECNN_CHECK(!device.id.empty(), "a tuning-cache device needs an id");
  std::string id = device.id;
  devices_[std::move(id)] = std::move(device);
}

// Every device's registries: a GPU section's entries name GPU solvers (cudnn), which the CPU's
// registry lacks; checking that one alone skipped them at every load, so the GPU re-tuned them.
bool is_known_solver(std::string_view name) {
  for (Device device : {Device::cpu, Device::cuda})
    if (find_conv_solver(name, device) != nullptr || find_pool_solver(name, device) != nullptr ||
        find_softmax_solver(name, device) != nullptr)
      return true;
  return false;
}

// ---- writing YAML ----
namespace {

// The end marker is a YAML comment, invisible to parsers, that tells a complete file from one cut
// short at an entry boundary (which would otherwise parse cleanly with entries missing).
constexpr std::string_view kEndMarker = "# end of tunecnn-tuning-cache";

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
  return std::string(out.c_str()) + "\n" + std::string(kEndMarker) + "\n";
}

// ---- reading YAML ----
namespace {

// Field access that fails with the field's name: these messages end up in user warnings.
YAML::Node field(const YAML::Node& map, const char* name) {
  YAML::Node value = map[name];
  if (!value) TUNECNN_FAIL("missing '", name, "'");
  return value;
}

void require_map(const YAML::Node& node, const char* what) {
  if (!node.IsMap()) TUNECNN_FAIL("'", what, "' is not a map");
}

// Every value read from the file goes through here. One holding control bytes is refused: the
// cache writes none, and `autotune show` would print them to the terminal.
template <class T>
T scalar_as(const YAML::Node& node, const char* name) {
  if (!node.IsScalar()) TUNECNN_FAIL("'", name, "' is not a scalar");
  if (printable(node.Scalar()) != node.Scalar())
    TUNECNN_FAIL("'", name, "' holds control characters: '", printable(node.Scalar()), "'");
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    TUNECNN_FAIL("'", name, "' has a bad value '", node.Scalar(), "'");
  }
}

template <class T>
T scalar(const YAML::Node& map, const char* name) {
  return scalar_as<T>(field(map, name), name);
}

TuneConfig parse_config(const YAML::Node& node) {
  TuneConfig config;
  if (node.IsNull()) return config;
  require_map(node, "config");
  for (const auto& item : node) {
    const auto name = scalar_as<std::string>(item.first, "config name");
    config.values.emplace_back(name, scalar_as<int>(item.second, "config value"));
  }
  return config;
}

Layout parse_layout_field(const YAML::Node& map) {
  const auto text = scalar<std::string>(map, "layout");
  try {
    return parse_layout(text);
  } catch (const Error&) {
    TUNECNN_FAIL("unknown layout '", text, "'");
  }
}

CandidateResult parse_candidate(const YAML::Node& node) {
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
  if (node["deterministic"]) c.deterministic = scalar<bool>(node, "deterministic");
  if (c.runs < 0) TUNECNN_FAIL("candidate ", c.solver, " has negative runs");
  // A negative time would make the planner pick the slowest candidate, and a NaN one fail to
  // compare: the entry is skipped and profiled again instead.
  for (const char* name : {"median_ms", "spread_ms"}) {
    const double ms = name == std::string_view("median_ms") ? c.median_ms : c.spread_ms;
    if (!std::isfinite(ms) || ms < 0)
      TUNECNN_FAIL("candidate ", c.solver, " has ", name, " ", node[name].Scalar(), " (needs a finite time >= 0)");
  }
  return c;
}

// Throws Error naming the problem; the caller skips the entry. Only the chosen solver must be
// known: a candidate of a solver this build lacks is still a fair record of what was measured.
TuningEntry parse_entry(const YAML::Node& node, const SolverFilter& known) {
  require_map(node, "entry");
  TuningEntry e;
  e.key = scalar<std::string>(node, "key");
  if (e.key.empty()) TUNECNN_FAIL("empty key");
  const YAML::Node choice = field(node, "choice");
  require_map(choice, "choice");
  e.solver = scalar<std::string>(choice, "solver");
  if (!known(e.solver)) TUNECNN_FAIL("unknown solver '", e.solver, "'");
  e.config = parse_config(field(choice, "config"));
  e.layout = parse_layout_field(choice);
  const YAML::Node candidates = field(node, "candidates");
  if (!candidates.IsSequence() && !candidates.IsNull()) TUNECNN_FAIL("'candidates' is not a list");
  for (const auto& c : candidates) e.candidates.push_back(parse_candidate(c));
  const YAML::Node provenance = field(node, "provenance");
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

double parse_gbps(const YAML::Node& node) {
  const auto gbps = scalar_as<double>(node, "transform_gbps value");
  if (!std::isfinite(gbps) || gbps < 0)
    TUNECNN_FAIL("bad bandwidth '", printable(node.Scalar()), "' (needs a finite number >= 0)");
  return gbps;
}

// Each bad pair is dropped with a warning; the rest of the device stays usable, since a missing
// bandwidth only means the planner calibrates it again.
std::map<std::string, double> parse_transform_gbps(const YAML::Node& node, const std::string& where,
                                                   std::vector<std::string>& warnings) {
  std::map<std::string, double> out;
  if (!node || node.IsNull()) return out;
  if (!node.IsMap()) {
    warnings.push_back(where + ": skipped 'transform_gbps': not a map");
    return out;
  }
  for (const auto& item : node) {
    const std::string pair = item.first.IsScalar() ? printable(item.first.Scalar()) : "?";
    try {
      check_transform_pair(pair);
      out[pair] = parse_gbps(item.second);
    } catch (const std::exception& e) {
      warnings.push_back(where + ": skipped transform_gbps '" + pair + "': " + user_message(e));
    }
  }
  return out;
}

DeviceThresholds parse_thresholds(const YAML::Node& node, const std::string& where,
                                  std::vector<std::string>& warnings) {
  DeviceThresholds t;
  if (!node || node.IsNull()) return t;
  require_map(node, "thresholds");
  if (node["mec_t"]) t.mec_t = scalar<int>(node, "mec_t");
  if (node["ct"]) t.ct = scalar<int>(node, "ct");
  if (node["nt"]) t.nt = scalar<int>(node, "nt");
  t.transform_gbps = parse_transform_gbps(node["transform_gbps"], where, warnings);
  return t;
}

// "the entry 'KEY'" when the key can be read, else its position: for warnings.
std::string entry_name(const YAML::Node& node, std::size_t index) {
  if (node.IsMap() && node["key"] && node["key"].IsScalar())
    return "entry '" + printable(node["key"].Scalar()) + "'";
  return "entry #" + std::to_string(index + 1);
}

void parse_entries(const YAML::Node& entries, DeviceRecord& device, const std::string& where,
                   std::vector<std::string>& warnings, const SolverFilter& known) {
  if (!entries || entries.IsNull()) return;
  if (!entries.IsSequence()) TUNECNN_FAIL("'entries' is not a list");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const YAML::Node node = entries[i];
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

// Throws Error for a device section that cannot be read at all; the caller skips it.
DeviceRecord parse_device(const YAML::Node& node, const std::string& source,
                          std::vector<std::string>& warnings, const SolverFilter& known) {
  require_map(node, "device");
  DeviceRecord device;
  device.id = scalar<std::string>(node, "id");
  if (device.id.empty()) TUNECNN_FAIL("empty device id");
  const YAML::Node fingerprint = field(node, "fingerprint");
  require_map(fingerprint, "fingerprint");
  for (const auto& item : fingerprint)
    device.fingerprint[scalar_as<std::string>(item.first, "fingerprint field")] =
        scalar_as<std::string>(item.second, "fingerprint value");
  const std::string where = source + ", device " + device.id;
  device.thresholds = parse_thresholds(node["thresholds"], where, warnings);
  parse_entries(node["entries"], device, where, warnings, known);
  return device;
}

bool ends_with_marker(std::string_view text) {
  const auto end = text.find_last_not_of(" \t\r\n");
  if (end == std::string_view::npos) return false;
  text = text.substr(0, end + 1);
  return text.size() >= kEndMarker.size() &&
         text.substr(text.size() - kEndMarker.size()) == kEndMarker;
}

// The checks that decide whether the file as a whole is usable.
void check_header(const YAML::Node& root, std::string_view text) {
  if (!root.IsMap()) TUNECNN_FAIL("not a tunecnn tuning cache (not a YAML map)");
  const YAML::Node format = root["format"];
  if (!format || !format.IsScalar() || format.Scalar() != kTuningCacheFormat)
    TUNECNN_FAIL("not a tunecnn tuning cache (format is '",
                 format && format.IsScalar() ? printable(format.Scalar()) : std::string("missing"),
                 "', expected '", kTuningCacheFormat, "')");
  const int version = scalar<int>(root, "version");
  if (version > kTuningCacheVersion)
    TUNECNN_FAIL("written by a newer tunecnn (format version ", version, ", this build reads ",
                 kTuningCacheVersion, ")");
  if (version < 1) TUNECNN_FAIL("bad format version ", version);
  if (!ends_with_marker(text)) TUNECNN_FAIL("truncated (the end marker is missing)");
}

}  // namespace

TuningCache parse_tuning_cache(std::string_view text, const std::string& source,
                               std::vector<std::string>& warnings, const SolverFilter& known) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    TUNECNN_FAIL(source, ": corrupt or truncated YAML: ", printable(e.what()));
  }
  try {
    check_header(root, text);
  } catch (const std::exception& e) {
    TUNECNN_FAIL(source, ": ", user_message(e));
  }
  const YAML::Node devices = root["devices"];
  if (devices && !devices.IsNull() && !devices.IsSequence())
    TUNECNN_FAIL(source, ": 'devices' is not a list");
  TuningCache cache;
  if (!devices || devices.IsNull()) return cache;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    try {
      DeviceRecord device = parse_device(devices[i], source, warnings, known);
      if (cache.devices().count(device.id)) TUNECNN_FAIL("a second section for ", device.id);
      cache.put_device(std::move(device));
    } catch (const std::exception& e) {
      warnings.push_back(source + ": skipped device #" + std::to_string(i + 1) + ": " +
                         user_message(e));
    }
  }
  return cache;
}

// ---- files, locking and bad files ----
namespace {

// An exclusive flock on PATH.lock for as long as the object lives. The lock file is never
// removed: deleting it would let two processes lock two different inodes.
class CacheLock {
 public:
  explicit CacheLock(const fs::path& cache_path) {
    const fs::path lock_path = fs::path(cache_path.string() + ".lock");
    fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    TUNECNN_CHECK(fd_ >= 0, "cannot open the lock file ", lock_path.string(), ": ",
                  std::strerror(errno));
    int rc;
    do rc = ::flock(fd_, LOCK_EX);
    while (rc != 0 && errno == EINTR);
    if (rc != 0) {
      const std::string why = std::strerror(errno);
      ::close(fd_);
      TUNECNN_FAIL("cannot lock ", lock_path.string(), ": ", why);
    }
  }
  ~CacheLock() { ::close(fd_); }  // closing releases the flock
  CacheLock(const CacheLock&) = delete;
  CacheLock& operator=(const CacheLock&) = delete;

 private:
  int fd_ = -1;
};

// nullopt when the file does not exist.
std::optional<std::string> read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (!fs::exists(path)) return std::nullopt;
    TUNECNN_FAIL("cannot read the tuning cache ", path.string(), ": ", std::strerror(errno));
  }
  std::ostringstream bytes;
  bytes << in.rdbuf();
  TUNECNN_CHECK(!in.bad(), "reading the tuning cache ", path.string(), " failed");
  return bytes.str();
}

std::string utc_stamp() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%d-%H%M%S", &utc);
  return text;
}

// PATH + suffix, or PATH + suffix + "-N" for the first N not taken. Called under the lock.
fs::path free_name(const fs::path& path, const std::string& suffix) {
  const std::string base = path.string() + suffix;
  fs::path candidate = base;
  for (int n = 1; fs::exists(candidate); ++n) candidate = base + "-" + std::to_string(n);
  return candidate;
}

// Renamed, not copied: the bytes stay exactly as they were, and the next writer starts afresh.
fs::path move_aside(const fs::path& path) {
  const fs::path aside = free_name(path, ".corrupt-" + utc_stamp());
  fs::rename(path, aside);
  return aside;
}

bool accept_any_solver(std::string_view) {
  return true;
}

// Under the lock: the file's contents, or, when it is unusable, an empty cache after the file has
// been moved aside (with a warning saying where).
LoadedTuningCache read_or_set_aside(const fs::path& path, const SolverFilter& known) {
  LoadedTuningCache loaded;
  const std::optional<std::string> text = read_text(path);
  if (!text) return loaded;
  try {
    loaded.cache = parse_tuning_cache(*text, path.string(), loaded.warnings, known);
  } catch (const Error& e) {
    const fs::path aside = move_aside(path);
    loaded.cache = TuningCache{};
    loaded.warnings = {e.message() + "; moved it aside to " + aside.string() +
                       " and started with an empty tuning cache"};
  }
  return loaded;
}

void create_parent(const fs::path& path) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
}

// The cache is a file we may replace and, when unreadable, move aside. A folder (or a device, a
// socket) at its path is the user's: refused before anything reads, moves or writes it.
void require_cache_file(const fs::path& path) {
  const fs::file_status status = fs::status(path);
  if (!fs::exists(status) || fs::is_regular_file(status)) return;
  TUNECNN_FAIL("the tuning cache ", path.string(), " is ", fs::is_directory(status) ? "a folder" : "not a regular file",
               ": name a file (--tune-cache FILE, or $TUNECNN_TUNE_CACHE); it is left as it is");
}

}  // namespace

LoadedTuningCache load_tuning_cache(const fs::path& path) {
  require_cache_file(path);
  LoadedTuningCache loaded;
  std::string problem;
  try {
    const std::optional<std::string> text = read_text(path);
    if (!text) return loaded;
    loaded.cache = parse_tuning_cache(*text, path.string(), loaded.warnings, is_known_solver);
    return loaded;
  } catch (const std::exception& e) {
    problem = user_message(e);
  }
  // Unusable as read. Take the lock before moving it aside: another process may have replaced it
  // with a good file meanwhile, and read_or_set_aside re-reads before deciding.
  try {
    CacheLock lock(path);
    return read_or_set_aside(path, is_known_solver);
  } catch (const std::exception& e) {
    return {TuningCache{},
            {problem + "; it could not be moved aside (" + user_message(e) +
             "), so it is left in place and the tuning cache starts empty"}};
  }
}

void save_tuning_cache(const TuningCache& cache, const fs::path& path) {
  require_cache_file(path);
  create_parent(path);
  CacheLock lock(path);
  write_file_atomically(path, cache.to_yaml());
}

LoadedTuningCache update_tuning_cache_file(const fs::path& path,
                                           const std::function<void(TuningCache&)>& fn) {
  require_cache_file(path);
  create_parent(path);
  CacheLock lock(path);
  LoadedTuningCache loaded = read_or_set_aside(path, accept_any_solver);
  // Entries we had to skip would vanish on rewrite; keep the file's bytes where a person can
  // recover them.
  if (!loaded.warnings.empty() && fs::exists(path)) {
    const fs::path copy = free_name(path, ".bad");
    fs::copy_file(path, copy);
    loaded.warnings.push_back(path.string() + ": had unreadable parts; its bytes were copied to " +
                              copy.string() + " before rewriting");
  }
  fn(loaded.cache);
  write_file_atomically(path, loaded.cache.to_yaml());
  return loaded;
}

// ---- merge and the default location ----
namespace {

long total_runs(const TuningEntry& entry) {
  long runs = 0;
  for (const CandidateResult& c : entry.candidates) runs += c.runs;
  return runs;
}

// ISO 8601 UTC dates of one format compare correctly as strings.
bool better_measured(const TuningEntry& b, const TuningEntry& a) {
  const long runs_a = total_runs(a), runs_b = total_runs(b);
  if (runs_b != runs_a) return runs_b > runs_a;
  return b.provenance.date > a.provenance.date;
}

template <class T>
std::optional<T> first_known(const std::optional<T>& a, const std::optional<T>& b) {
  return a ? a : b;
}

}  // namespace

TuningCache merge(const TuningCache& a, const TuningCache& b) {
  TuningCache out = a;
  for (const auto& [id, theirs] : b.devices()) {
    const auto mine = a.devices().find(id);
    if (mine == a.devices().end()) {
      out.put_device(theirs);
      continue;
    }
    DeviceRecord merged = mine->second;
    merged.thresholds.mec_t = first_known(merged.thresholds.mec_t, theirs.thresholds.mec_t);
    merged.thresholds.ct = first_known(merged.thresholds.ct, theirs.thresholds.ct);
    merged.thresholds.nt = first_known(merged.thresholds.nt, theirs.thresholds.nt);
    // std::map::insert keeps a's bandwidth for every pair a has.
    merged.thresholds.transform_gbps.insert(theirs.thresholds.transform_gbps.begin(),
                                            theirs.thresholds.transform_gbps.end());
    for (const auto& [key, entry] : theirs.entries) {
      const auto existing = merged.entries.find(key);
      if (existing == merged.entries.end() || better_measured(entry, existing->second))
        merged.entries[key] = entry;
    }
    out.put_device(std::move(merged));
  }
  return out;
}

fs::path default_tuning_cache_path() {
  const auto env = [](const char* name) -> std::string {
    const char* value = std::getenv(name);
    return value != nullptr ? value : "";
  };
  if (const std::string explicit_path = env("TUNECNN_TUNE_CACHE"); !explicit_path.empty())
    return explicit_path;
  // The XDG spec says a relative XDG_CACHE_HOME is invalid and must be ignored.
  if (const std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty() && fs::path(xdg).is_absolute())
    return fs::path(xdg) / "tunecnn" / "tuning.yaml";
  if (const std::string home = env("HOME"); !home.empty())
    return fs::path(home) / ".cache" / "tunecnn" / "tuning.yaml";
  return fs::path("tunecnn-tuning.yaml");  // no home at all: the working folder
}

}  // namespace tunecnn
