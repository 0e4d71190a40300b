// export-onnx: a checkpoint of `train` to an ONNX file.
#include <iostream>

#include "apps/training/export_command.h"
#include "core/error.h"

int main(int argc, char** argv) {
  try {
    tunecnn::CommandLine cli = tunecnn::export_command_line();
    if (!cli.parse(argc, argv)) return 0;
    tunecnn::run_export(cli, std::cout);
    return 0;
  } catch (const tunecnn::UsageError& e) {
    std::cerr << "export-onnx: error: " << e.message() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "export-onnx: error: " << tunecnn::user_message(e) << "\n";
    return 1;
  }
}
