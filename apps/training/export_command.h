#pragma once
// `export-onnx`: a trained checkpoint (train --checkpoint-dir) to an ONNX file.
#include <ostream>

#include "apps/common/cli.h"

namespace tunecnn {

CommandLine export_command_line();
// Reads the checkpoint, rebuilds its network, loads its weights and writes the file. Throws
// UsageError for a bad command line, Error naming the file for anything else.
void run_export(const CommandLine& cli, std::ostream& out);

}  // namespace tunecnn
