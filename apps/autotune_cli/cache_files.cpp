#include "apps/autotune_cli/cache_files.h"

#include <fstream>
#include <ostream>
#include <sstream>
#include <utility>

#include "autotune/tuning_cache_layers.h"
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

TuningCache CacheLayers::view() const {
  return layered(user, system);
}

std::string_view CacheLayers::layer_of(const std::string& device_id, const std::string& key) const {
  return user.find(device_id, key) != nullptr ? "user" : "system";
}

CacheLayers read_cache_layers(const std::filesystem::path& user_path, std::ostream& err) {
  CacheLayers layers;
  layers.user_path = user_path;
  layers.system_path = default_system_tuning_cache_path();
  LoadedTuningCache system = load_system_tuning_cache(layers.system_path);
  for (const std::string& warning : system.warnings) err << "warning: " << warning << "\n";
  layers.system = std::move(system.cache);
  layers.has_user = std::filesystem::exists(user_path);
  if (layers.has_user) layers.user = read_cache_file(user_path, err);
  return layers;
}

}  // namespace tunecnn
