// Writes the seeds that need the project's own writers: a checkpoint (save_checkpoint) and a
// tuning cache (TuningCache::to_yaml), into the corpus folders given. Run once by hand when the
// formats change: build-fuzz/fuzz/fuzz_make_seeds fuzz/corpus
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

#include "autotune/tuning_cache.h"
#include "core/checkpoint.h"
#include "core/tensor.h"

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

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_make_seeds CORPUS_DIR\n";
    return 2;
  }
  const fs::path corpus = argv[1];
  checkpoint_seed(corpus / "checkpoint");
  tuning_cache_seed(corpus / "tuning_cache");
  return 0;
}
