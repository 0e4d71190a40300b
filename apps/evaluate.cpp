// evaluate: scores a checkpoint of `train` on a data set.
#include <iostream>

#include "apps/common/openmp_wait.h"
#include "apps/training/evaluate_command.h"
#include "core/error.h"

int main(int argc, char** argv) {
  tunecnn::use_passive_openmp_threads(argv);
  try {
    tunecnn::CommandLine cli = tunecnn::evaluate_command_line();
    if (!cli.parse(argc, argv)) return 0;
    tunecnn::run_evaluate(cli, std::cout);
    return 0;
  } catch (const tunecnn::UsageError& e) {
    std::cerr << "evaluate: error: " << e.message() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "evaluate: error: " << tunecnn::user_message(e) << "\n";
    return 1;
  }
}
