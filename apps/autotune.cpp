// autotune: profiles conv layers and manages the tuning cache; see `autotune --help`.
#include <iostream>
#include <string>
#include <vector>

#include "apps/autotune_cli/autotune_app.h"
#include "apps/common/openmp_wait.h"

int main(int argc, char** argv) {
  tunecnn::use_passive_openmp_threads(argv);
  return tunecnn::run_autotune(std::vector<std::string>(argv + 1, argv + argc), std::cout,
                               std::cerr);
}
