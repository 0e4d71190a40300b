// autotune export -o site.yaml: a system cache made from one device section of the user's cache,
// to ship to machines of the same kind (installed as <prefix>/share/tunecnn/tuning.yaml or named
// by $TUNECNN_SYSTEM_TUNE_CACHE), so that they start tuned: `--tune cached` finds every entry
// there and profiles nothing, and `--tune verify` on other devices re-times only its shortlists.
#include <algorithm>
#include <cctype>
#include <ostream>
#include <system_error>

#include "apps/autotune_cli/cache_files.h"
#include "apps/autotune_cli/describe.h"
#include "apps/autotune_cli/options.h"
#include "apps/autotune_cli/subcommands.h"
#include "apps/common/device_check.h"
#include "core/atomic_file.h"
#include "core/error.h"

namespace tunecnn {
namespace {

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// --device: this machine's CPU section (cpu, or current: what `train` runs on by default), its
// GPU's (cuda), or any section id as `autotune show` prints it (a section merged in from
// another machine).
std::string section_to_export(const std::string& device, const TuningCache& cache) {
  const std::string word = lowercase(device);
  if (word == "cpu" || word == "current") return this_device(Device::cpu).id;
  if (word == "cuda") {
    require_device(Device::cuda);
    return this_device(Device::cuda).id;
  }
  if (cache.devices().count(device) == 1) return device;
  throw UsageError("--device " + device + ": expected cpu, cuda, current or a device section id");
}

std::string section_ids(const TuningCache& cache) {
  std::string ids;
  for (const auto& [id, device] : cache.devices()) ids += (ids.empty() ? "" : ", ") + id;
  return ids.empty() ? "none" : ids;
}

bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code error;
  return std::filesystem::equivalent(a, b, error);
}

}  // namespace

int run_export(const SubcommandArgs& args, std::ostream& out, std::ostream& err) {
  SubcommandLine cli(
      "autotune export -o FILE",
      "Writes FILE, a system tuning cache holding one device's section of the user's cache "
      "(fingerprint, thresholds, every entry), for machines of the same kind: install it as "
      "<prefix>/share/tunecnn/tuning.yaml beside the programs' folder, or name it in "
      "$TUNECNN_SYSTEM_TUNE_CACHE. `train` reads it read-only under the user's cache, so "
      "`--tune cached` there profiles nothing it holds and `--tune verify` on another device of "
      "the same kind re-times at most the best candidate per layout. FILE is written atomically "
      "and an existing one is kept unless --force.");
  cli.option("device", "current",
             "the section to export: current or cpu (this machine's CPU at --threads, what "
             "`train` runs on by default), cuda (this machine's first GPU), or a device "
             "section id as `autotune show` prints it");
  cli.option("output", "", "the system cache to write (-o FILE)");
  cli.flag("force", "replace FILE when it exists");
  cli.common_options();
  if (!cli.parse(args, out, 0, 0)) return 0;
  const CommandLine& o = cli.options();
  if (!o.has("output")) throw UsageError("export needs -o FILE, the system cache to write");
  apply_threads(o);
  const std::filesystem::path source = tune_cache_path(o), target = o.get("output");
  TUNECNN_CHECK(!same_file(source, target), target.string(),
                " is the user's tuning cache itself; export writes a new file");
  TUNECNN_CHECK(o.has("force") || !std::filesystem::exists(target), target.string(),
                " exists; pass --force to replace it");
  const TuningCache user = read_cache_file(source, err);
  const std::string id = section_to_export(o.get("device"), user);
  const auto section = user.devices().find(id);
  TUNECNN_CHECK(section != user.devices().end(), source.string(), " has no section for ", id,
                " (it has: ", section_ids(user),
                "); profile this machine first with "
                "`autotune profile`, or pick a section with --device ID");

  TuningCache site;
  site.put_device(section->second);
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path());
  write_file_atomically(target, site.to_yaml());
  out << "wrote " << target.string() << ": 1 device, " << section->second.entries.size()
      << " entries\n  device " << id << " (" << fingerprint_summary(section->second.fingerprint)
      << ")\n  thresholds: " << thresholds_summary(section->second.thresholds) << "\n";
  return 0;
}

}  // namespace tunecnn
