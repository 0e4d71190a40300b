// train: teaches a model on a data set; with no arguments, LeNet on Fashion-MNIST.
#include <iostream>
#include <memory>

#include "apps/common/openmp_wait.h"
#include "apps/training/train_command_line.h"
#include "apps/training/trainer.h"
#include "core/communicator.h"
#include "core/error.h"

int main(int argc, char** argv) {
  tunecnn::use_passive_openmp_threads(argv);
  std::shared_ptr<tunecnn::Communicator> comm;
  try {
    tunecnn::CommandLine cli = tunecnn::train_command_line();
    if (!cli.parse(argc, argv)) return 0;
    tunecnn::TrainOptions options = tunecnn::train_options(cli);
    comm = tunecnn::make_communicator();
    comm->set_timeout_seconds(cli.get_double("collective-timeout"));
    TUNECNN_CHECK(comm->timeout_seconds() > 0, "--collective-timeout must be positive");
    options.comm = comm;
    tunecnn::install_interrupt_handler();
    const tunecnn::TrainResult result = tunecnn::train(options, std::cout);
    const bool talk = comm->is_root();  // every rank ends the same way; one says so
    switch (result.status) {
      case tunecnn::TrainStatus::completed: return 0;
      case tunecnn::TrainStatus::interrupted: if (talk) std::cerr << "train: " << result.message << "\n"; return 130;
      case tunecnn::TrainStatus::diverged: if (talk) std::cerr << "train: error: " << result.message << "\n"; return 3;
    }
  } catch (const tunecnn::UsageError& e) {
    std::cerr << "train: error: " << e.message() << "\n";
    return 2;
  } catch (const std::exception& e) {
    // With other ranks waiting in a collective, returning would leave them to time out: end the
    // whole job now, with this rank's reason.
    if (comm && comm->size() > 1) comm->abort("train: " + tunecnn::user_message(e));
    std::cerr << "train: error: " << tunecnn::user_message(e) << "\n";
    return 1;
  }
  return 1;
}
