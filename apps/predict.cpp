// predict: a checkpoint of `train` classifies image files.
#include <iostream>

#include "apps/common/openmp_wait.h"
#include "apps/training/predict_command.h"
#include "core/error.h"

int main(int argc, char** argv) {
  tunecnn::use_passive_openmp_threads(argv);
  try {
    tunecnn::CommandLine cli = tunecnn::predict_command_line();
    if (!cli.parse(argc, argv)) return 0;
    tunecnn::run_predict(cli, std::cout);
    return 0;
  } catch (const tunecnn::UsageError& e) {
    std::cerr << "predict: error: " << e.message() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "predict: error: " << tunecnn::user_message(e) << "\n";
    return 1;
  }
}
