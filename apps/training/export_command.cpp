#include "apps/training/export_command.h"

#include <filesystem>

#include "apps/training/model_export.h"
#include "apps/training/trained_checkpoint.h"

namespace tunecnn {

CommandLine export_command_line() {
  CommandLine cli("export-onnx",
                  "Writes a network trained by `train --checkpoint-dir` as an ONNX file (opset 13): weights as "
                  "initializers, BatchNorm as BatchNormalization, ReLU6 as Clip, LRN as LRN, dropout left out; input "
                  "'input' [batch, C, H, W], output 'logits' [batch, classes]. ONNX's checker passes it before it is "
                  "written (atomically). `train --model FILE.onnx` and ONNX runtimes read it.\n"
                  "Exit status: 0 written, 1 error, 2 bad command line.");
  cli.option("checkpoint", "", "the checkpoint: a file (last.ckpt) or the --checkpoint-dir holding it");
  cli.option("model", "", "the network it was trained as (default: the name the checkpoint records)");
  cli.option("o", "", "the ONNX file to write");
  cli.flag("force", "replace the -o file if it exists");
  return cli;
}

void run_export(const CommandLine& cli, std::ostream& out) {
  if (!cli.has("o")) throw UsageError("-o FILE is required (the ONNX file to write)");
  const std::filesystem::path file = cli.get("o");
  check_export_target(file, cli.has("force"), "-o", "--force");
  const TrainedCheckpoint c = read_trained_checkpoint(cli);
  const auto model = c.build_network();
  out << "read " << c.file.string() << ": " << c.model << ", epoch " << c.data.value("epoch") << "\n";
  export_model(*model, c.example, file, out);
}

}  // namespace tunecnn
