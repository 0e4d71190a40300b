#include "apps/autotune_cli/cache_files.h"

#include <fstream>
#include <ostream>
#include <sstream>

#include "core/error.h"

namespace tunecnn {

TuningCache read_cache_file(const std::filesystem::path& path, std::ostream& err) {
  TUNECNN_CHECK(std::filesystem::exists(path), "no tuning cache at ", path.string(),
                " (check the path, or create one with `autotune profile`)");
  std::ifstream in(path, std::ios::binary);
  TUNECNN_CHECK(in.good(), "cannot read tuning cache ", path.string());
  std::ostringstream text;
  text << in.rdbuf();
  std::vector<std::string> warnings;
  TuningCache cache = parse_tuning_cache(text.str(), path.string(), warnings,
                                         [](std::string_view) { return true; });
  for (const std::string& warning : warnings) err << "warning: " << warning << "\n";
  return cache;
}

}  // namespace tunecnn
