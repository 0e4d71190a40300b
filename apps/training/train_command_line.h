#pragma once
// The `train` command line: its options (for --help and parsing) and the TrainOptions they give.
#include "apps/common/cli.h"
#include "apps/training/trainer.h"

namespace tunecnn {

// Every option of `train` with its default and help line.
CommandLine train_command_line();
// Reads the parsed options; every failure is a UsageError naming the option (the command line
// is the user's to fix). Checks what can be checked before any data is loaded.
TrainOptions train_options(const CommandLine& cli);

}  // namespace tunecnn
