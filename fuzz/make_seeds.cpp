// Writes the seeds that need the project's own writers: a checkpoint (save_checkpoint), a
// tuning cache (TuningCache::to_yaml) and, in a build with ONNX, tiny networks (export_onnx),
// into the corpus folders given. Run once by hand when the formats change:
// build-fuzz/fuzz/fuzz_make_seeds fuzz/corpus
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "autotune/tuning_cache.h"
#include "core/checkpoint.h"
#include "core/tensor.h"

#ifdef TUNECNN_HAVE_ONNX
#include "core/module.h"
#include "core/rng.h"
#include "models/onnx_export.h"
#include "ops/batch_norm.h"
#include "ops/conv/conv2d.h"
#include "ops/flatten.h"
#include "ops/global_avg_pool.h"
#include "ops/linear.h"
#include "ops/lrn.h"
#include "ops/pool/pool2d.h"
#include "ops/relu.h"
#endif

namespace {

namespace fs = std::filesystem;

void write(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
  std::cout << path.string() << ": " << bytes.size() << " bytes\n";
}

// fuzz_checkpoint appends the CRC itself, so its seeds are checkpoints without the trailer.
void checkpoint_seed(const fs::path& dir) {
  using namespace tunecnn;
  CheckpointData data;
  data.meta = {{"epoch", "3"}, {"model", "lenet"}, {"rng", "12345 678"}};
  Tensor weights = Tensor::zeros({2, 1, 3, 3}, DType::f32);
  Tensor nhwc = Tensor::zeros({1, 2, 2, 2}, DType::f64, Device::cpu, Layout::NHWC);
  data.tensors = {{"param/conv1.weight", weights}, {"buffer/bn.mean", nhwc},
                  {"scalar", Tensor::zeros({}, DType::f32)}};
  const fs::path full = dir / "full.ckpt";
  save_checkpoint(full, data);
  std::ifstream in(full, std::ios::binary);
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  fs::remove(full);
  write(dir / "lenet-like.body", bytes.substr(0, bytes.size() - 4));
}

void tuning_cache_seed(const fs::path& dir) {
  using namespace tunecnn;
  const std::map<std::string, std::string> fingerprint = {{"model", "Test CPU"}, {"threads_used", "4"}};
  TuningEntry entry;
  entry.key = "conv fwd mb8 ic3 ih32 iw32 oc16 kh3 kw3 sh1 sw1 ph1 pw1 g1";
  entry.solver = "mec";
  entry.config = TuneConfig{{{"T", 100}, {"chunk", 4}}};
  entry.candidates.push_back({"mec", entry.config, Layout::NHWC, 1.25, 0.0625, 10, 4096, true});
  entry.candidates.push_back({"im2col_gemm", TuneConfig{{{"chunk", 2}}}, Layout::NCHW, 1.5, 0.01, 3, 1 << 20, true});
  entry.candidates.push_back({"direct", {}, Layout::NCHW, 9.5, 0, 1, 0, false});
  entry.layout = Layout::NHWC;
  entry.provenance = {"host-a", "2026-11-27T12:00:00Z", "0.1.0"};
  TuningCache cache;
  cache.put("cpu-0000000000000001", fingerprint, entry);
  DeviceThresholds thresholds;
  thresholds.mec_t = 8;
  thresholds.ct = 64;
  thresholds.nt = 128;
  thresholds.transform_gbps = {{"NCHW>CHWN", 11.5}, {"NHWC>NCHW", 9.25}};
  cache.set_thresholds("cpu-0000000000000001", fingerprint, thresholds);
  write(dir / "one-device.yaml", cache.to_yaml());
}

#ifdef TUNECNN_HAVE_ONNX
// Networks of a few hundred weights each, so a seed stays a few KB and every mutation imports
// and runs in well under a millisecond; between them they hold every node kind the exporter
// writes. The nodes it never writes (Pad, Constant, MatMul, Reshape, ...) come from
// fuzz/make_onnx_seeds.py.
void onnx_seeds(const fs::path& dir) {
  using namespace tunecnn;
  Rng rng(7);
  Sequential plain;
  plain.add(std::make_shared<Conv2d>(3, 4, 3, 1, 1, rng)).add(std::make_shared<BatchNorm2d>(4));
  plain.add(std::make_shared<ReLU>()).add(std::make_shared<Pool2d>(PoolKind::max, PoolGeometry::square(2, 2)));
  plain.add(std::make_shared<Flatten>()).add(std::make_shared<Linear>(4 * 4 * 4, 5, rng));
  Sequential depthwise;
  depthwise.add(std::make_shared<Conv2d>(4, 4, 3, 1, 1, rng, 4, false)).add(std::make_shared<ReLU6>());
  depthwise.add(std::make_shared<Conv2d>(4, 6, 1, 1, 0, rng)).add(std::make_shared<BatchNorm2d>(6));
  depthwise.add(std::make_shared<ReLU6>()).add(std::make_shared<GlobalAvgPool>());
  depthwise.add(std::make_shared<Linear>(6, 3, rng));
  Sequential lrn;
  lrn.add(std::make_shared<Conv2d>(1, 3, 5, 2, 2, rng)).add(std::make_shared<ReLU>());
  lrn.add(std::make_shared<LocalResponseNorm>(LrnParams{3, 1e-4, 0.75, 2.0}));
  lrn.add(std::make_shared<Pool2d>(PoolKind::avg, PoolGeometry::square(3, 2, 1)));
  lrn.add(std::make_shared<Flatten>()).add(std::make_shared<Linear>(3 * 3 * 3, 4, rng));
  const std::vector<std::tuple<const char*, const Sequential*, Shape>> networks = {
      {"conv-bn-relu-pool-gemm.onnx", &plain, {3, 8, 8}},
      {"depthwise-relu6-gap.onnx", &depthwise, {4, 6, 6}},
      {"lrn-avgpool-stride2.onnx", &lrn, {1, 10, 10}}};
  for (const auto& [name, model, input] : networks) {
    export_onnx(*model, input, dir / name);
    std::cout << (dir / name).string() << ": " << fs::file_size(dir / name) << " bytes\n";
  }
}
#endif

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_make_seeds CORPUS_DIR\n";
    return 2;
  }
  const fs::path corpus = argv[1];
  checkpoint_seed(corpus / "checkpoint");
  tuning_cache_seed(corpus / "tuning_cache");
#ifdef TUNECNN_HAVE_ONNX
  onnx_seeds(corpus / "onnx");
#endif
  return 0;
}
