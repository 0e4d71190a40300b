#include "apps/training/export_command.h"

#include <filesystem>

#include "apps/training/model_export.h"
#include "core/checkpoint.h"
#include "models/registry.h"

namespace tunecnn {
namespace {

// The classes of a checkpoint written before they were kept in it: the rows of its last
// parameter with two dims (the classifier's weight).
int classes_of(const CheckpointData& data, const std::string& source) {
  if (data.meta.count("classes")) return std::stoi(data.value("classes"));
  int classes = 0;
  for (const auto& [name, tensor] : data.tensors)
    if (name.rfind("param/", 0) == 0 && tensor.shape().size() == 2) classes = static_cast<int>(tensor.shape()[0]);
  TUNECNN_CHECK(classes > 0, source, " has no fully connected layer to read the class count from");
  return classes;
}

// The example shape the checkpoint records ("1,28,28"), else the model's own.
Shape input_of(const CheckpointData& data, const std::string& model, const std::string& source) {
  if (!data.meta.count("input")) return model_input_shape(model);
  try {
    return parse_chw(data.value("input"), "input");
  } catch (const Error& e) {
    TUNECNN_FAIL(source, ": its input shape: ", e.message());
  }
}

}  // namespace

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
  namespace fs = std::filesystem;
  if (!cli.has("checkpoint")) throw UsageError("--checkpoint is required (a last.ckpt, or its folder)");
  if (!cli.has("o")) throw UsageError("-o FILE is required (the ONNX file to write)");
  const fs::path file = cli.get("o");
  check_export_target(file, cli.has("force"), "-o");
  fs::path checkpoint = cli.get("checkpoint");
  if (fs::is_directory(checkpoint)) checkpoint /= "last.ckpt";
  const CheckpointData data = load_checkpoint(checkpoint);
  const std::string source = "checkpoint " + checkpoint.string();
  TUNECNN_CHECK(data.meta.count("format") && data.value("format") == "tunecnn-train", source,
                " is not a training checkpoint (train --checkpoint-dir writes those)");
  const std::string model_name = cli.has("model") ? cli.get("model") : data.value("model");
  const Shape input = input_of(data, model_name, source);
  Rng rng(1);
  auto model = build_model(model_name, {.input_shape = input, .num_classes = classes_of(data, source),
                                        .dropout_rng = nullptr, .planners = {}}, rng);
  load_module_state(*model, data, source);
  out << "read " << checkpoint.string() << ": " << model_name << ", epoch " << data.value("epoch") << "\n";
  export_model(*model, input, file, out);
}

}  // namespace tunecnn
