#pragma once
// Writing a trained network as ONNX (models/onnx_export.h), for `export-onnx` and
// `train --export`: the checks before any work is done, and the write with its report.
#include <filesystem>
#include <ostream>
#include <string>

#include "core/module.h"

namespace tunecnn {

// Before training or loading anything: `file` (given as `option`) must not be an existing file
// unless `replace` (the user gave `replace_flag`), nor a folder, and its folder must exist. Throws
// Error saying what to do, also when this build has no ONNX.
void check_export_target(const std::filesystem::path& file, bool replace, const std::string& option,
                         const std::string& replace_flag);

// Writes `model` for examples of `input` (C, H, W) to `file` atomically and says so on `out`,
// with what was left out (dropout).
void export_model(const Module& model, const Shape& input, const std::filesystem::path& file, std::ostream& out);

}  // namespace tunecnn
