#include "apps/training/model_export.h"

#include "core/error.h"
#ifdef TUNECNN_HAVE_ONNX
#include "models/onnx_export.h"
#endif

namespace tunecnn {
namespace {

// A build without ONNX says what to install, naming what asked for the file.
void require_onnx([[maybe_unused]] const std::string& what) {
#ifndef TUNECNN_HAVE_ONNX
  TUNECNN_FAIL(what, ": this build of tunecnn cannot write ONNX files; install Debian's libonnx-dev "
               "and libprotobuf-dev and build again (cmake -DTUNECNN_ONNX=ON)");
#endif
}

}  // namespace

void check_export_target(const std::filesystem::path& file, bool replace, const std::string& option,
                         const std::string& replace_flag) {
  namespace fs = std::filesystem;
  require_onnx(option);
  TUNECNN_CHECK(!file.empty(), option, " needs a file name");
  TUNECNN_CHECK(!fs::is_directory(file), option, " ", file.string(), " is a folder; name a file such as net.onnx");
  TUNECNN_CHECK(replace || !fs::exists(file), option, " ", file.string(),
                " exists; name another file, or say it may be replaced (", replace_flag, ")");
  const fs::path folder = file.has_parent_path() ? file.parent_path() : fs::path(".");
  TUNECNN_CHECK(fs::is_directory(folder), option, " ", file.string(), ": the folder ", folder.string(),
                " does not exist");
}

void export_model(const Module& model, const Shape& input, const std::filesystem::path& file, std::ostream& out) {
  require_onnx("ONNX export");
#ifdef TUNECNN_HAVE_ONNX
  const std::vector<std::string> notes = export_onnx(model, input, file);
  out << "wrote " << file.string() << " (ONNX opset 13): input 'input' [batch, " << input[0] << ", " << input[1]
      << ", " << input[2] << "], output 'logits' [batch, classes]\n";
  for (const std::string& note : notes) out << "  " << note << "\n";
#else
  (void)model, (void)input, (void)file, (void)out;
#endif
}

}  // namespace tunecnn
