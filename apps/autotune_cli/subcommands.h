#pragma once
// One function per `autotune` subcommand, each in its own file. `args` excludes the subcommand's
// name. They throw UsageError (options.h) for a bad command line and Error for anything else.
#include <iosfwd>
#include <string>
#include <vector>

namespace tunecnn {

using SubcommandArgs = std::vector<std::string>;

class SubcommandLine;
// `autotune profile`'s options, apart from run_profile so the fuzz target parses exactly them.
SubcommandLine profile_command_line();
int run_profile(const SubcommandArgs& args, std::ostream& out, std::ostream& err);
int run_calibrate(const SubcommandArgs& args, std::ostream& out, std::ostream& err);
int run_show(const SubcommandArgs& args, std::ostream& out, std::ostream& err);
int run_explain(const SubcommandArgs& args, std::ostream& out, std::ostream& err);
int run_merge(const SubcommandArgs& args, std::ostream& out, std::ostream& err);
int run_export(const SubcommandArgs& args, std::ostream& out, std::ostream& err);
int run_fingerprint(const SubcommandArgs& args, std::ostream& out, std::ostream& err);
int run_diff(const SubcommandArgs& args, std::ostream& out, std::ostream& err);
int run_stats(const SubcommandArgs& args, std::ostream& out, std::ostream& err);
int run_prune(const SubcommandArgs& args, std::ostream& out, std::ostream& err);

}  // namespace tunecnn
