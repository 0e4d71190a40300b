#include "apps/autotune_cli/autotune_app.h"

#include <functional>
#include <ostream>
#include <string_view>

#include "apps/autotune_cli/options.h"
#include "apps/autotune_cli/subcommands.h"
#include "core/error.h"

namespace tunecnn {
namespace {

struct Subcommand {
  std::string_view name, summary;
  std::function<int(const SubcommandArgs&, std::ostream&, std::ostream&)> run;
  int error_status = 1;  // diff follows diff(1): 2 on trouble, since 1 means "they differ"
};

const std::vector<Subcommand>& subcommands() {
  static const std::vector<Subcommand> list = {
      {"profile", "profile a model's conv layers at one batch size and cache the decisions",
       run_profile},
      {"calibrate", "measure this device's thresholds (MEC's T, Ct/Nt, transform bandwidths)",
       run_calibrate},
      {"show", "print a tuning cache: devices, thresholds, every decision", run_show},
      {"explain", "why each solver can or cannot run a conv problem key, and its timings",
       run_explain},
      {"merge", "merge two caches into a third, keeping the better-measured entries", run_merge},
      {"export", "write a system cache (read-only, under users' caches) from one device's section",
       run_export},
      {"fingerprint", "print this machine's CPU and GPU fingerprints and their cache section ids",
       run_fingerprint},
      {"diff", "compare two caches' decisions and thresholds (exit 1 when they differ)", run_diff,
       2},
      {"stats", "a cache's size and, per device section, entries, candidates, version, last use",
       run_stats},
      {"prune", "drop stale and old-version sections, gone solvers and unread candidates",
       run_prune},
  };
  return list;
}

std::string overview() {
  std::string text =
      "usage: autotune SUBCOMMAND [options]\n\n"
      "Profiles conv layers and manages the YAML tuning cache that `train` reuses.\n\n"
      "subcommands:\n";
  for (const Subcommand& sub : subcommands()) {
    std::string left = "  " + std::string(sub.name);
    left.resize(13, ' ');
    text += left + std::string(sub.summary) + "\n";
  }
  return text + "\n`autotune SUBCOMMAND --help` lists a subcommand's options.\n"
                "Exit status: 0 done, 1 error, 2 bad command line (diff: 1 when the caches differ, "
                "2 on trouble).\n";
}

const Subcommand* find_subcommand(std::string_view name) {
  for (const Subcommand& sub : subcommands())
    if (sub.name == name) return &sub;
  return nullptr;
}

std::string subcommand_names() {
  std::string names;
  for (const Subcommand& sub : subcommands())
    names += (names.empty() ? "" : ", ") + std::string(sub.name);
  return names;
}

}  // namespace

int run_autotune(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    (args.empty() ? err : out) << overview();
    return args.empty() ? 2 : 0;
  }
  const Subcommand* sub = find_subcommand(args[0]);
  if (sub == nullptr) {
    err << "autotune: error: unknown subcommand '" << args[0] << "' (expected one of "
        << subcommand_names() << "; see autotune --help)\n";
    return 2;
  }
  try {
    return sub->run(SubcommandArgs(args.begin() + 1, args.end()), out, err);
  } catch (const UsageError& e) {
    err << "autotune " << sub->name << ": error: " << e.message() << "\n";
    return 2;
  } catch (const std::exception& e) {
    err << "autotune " << sub->name << ": error: " << user_message(e) << "\n";
    return sub->error_status;
  }
}

}  // namespace tunecnn
