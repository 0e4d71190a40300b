// `bench conv`'s untimed pieces: option parsing, the repeat policy's stopping rule, the fastest
// mark, the CSV, the PyTorch line protocol and the MEC paper's lowered-matrix formulas.
#include <gtest/gtest.h>

#include <sstream>

#include "apps/bench/conv_options.h"
#include "apps/bench/conv_report.h"
#include "apps/bench/conv_results.h"
#include "apps/bench/conv_vendor_report.h"
#include "apps/bench/pytorch_worker.h"
#include "core/error.h"

namespace tunecnn {
namespace {

ConvBenchOptions parse(std::vector<const char*> args) {
  args.insert(args.begin(), "conv");
  CommandLine cli("bench conv", "test");
  declare_conv_bench_options(cli);
  EXPECT_TRUE(cli.parse(static_cast<int>(args.size()), args.data()));
  return conv_bench_options(cli);
}

ConvBenchRow row(const std::string& layer, const std::string& solver, Direction dir, double ms) {
  ConvBenchRow r;
  r.layer = layer;
  r.solver = solver;
  r.dir = dir;
  r.batch = 8;
  r.macs = 1'000'000;
  r.timing = {ms / 1e3, ms / 1e3, ms / 1e3, 5};
  return r;
}

TEST(BenchConvOptions, DefaultsAndValues) {
  const ConvBenchOptions d = parse({});
  EXPECT_EQ(d.layers, "mec-paper");
  EXPECT_EQ(d.threads, 2);
  EXPECT_EQ(d.directions.size(), 3u);
  EXPECT_TRUE(d.solvers.empty());
  EXPECT_TRUE(d.pytorch);
  EXPECT_TRUE(d.mec_memory);
  const ConvBenchOptions o =
      parse({"--layers", "lenet", "--batch", "64", "--direction", "bwd-weights", "--solvers",
             "im2col_gemm,direct", "--pytorch", "off", "--csv", "out.csv"});
  EXPECT_EQ(o.layers, "lenet");
  EXPECT_EQ(o.batch, 64);
  EXPECT_EQ(o.directions, std::vector<Direction>{Direction::bwd_weights});
  EXPECT_EQ(o.solvers, (std::vector<std::string>{"im2col_gemm", "direct"}));
  EXPECT_FALSE(o.pytorch);
  EXPECT_FALSE(o.mec_memory);
  EXPECT_EQ(o.csv, "out.csv");
}

TEST(BenchConvOptions, FixedRepeatsOverrideTheSettleRule) {
  const RepeatPolicy r = parse({"--repeats", "7", "--warmup", "2"}).repeats;
  EXPECT_EQ(r.min_repeats, 7);
  EXPECT_EQ(r.max_repeats, 7);
  EXPECT_FALSE(repeats_done(r, std::vector<double>(6, 100.0)));
  EXPECT_TRUE(repeats_done(r, std::vector<double>(7, 100.0)));
  EXPECT_EQ(describe(r), "2 warm-up call(s), then exactly 7 timed calls; the median is reported");
}

TEST(BenchConvOptions, RejectsBadValues) {
  EXPECT_THROW(parse({"--layers", "vgg"}), Error);
  EXPECT_THROW(parse({"--direction", "sideways"}), Error);
  EXPECT_THROW(parse({"--solvers", "fft"}), Error);
  EXPECT_THROW(parse({"--pytorch", "maybe"}), Error);
  EXPECT_THROW(parse({"--batch", "0"}), Error);
  EXPECT_THROW(parse({"--min-repeats", "9", "--max-repeats", "3"}), Error);
  EXPECT_THROW(parse({"--repeats", "0"}), Error);
}

TEST(BenchConvOptions, DirectionsAcceptBothSpellingsOnceEach) {
  EXPECT_EQ(parse_directions("bwd_data,fwd,bwd-data"),
            (std::vector<Direction>{Direction::bwd_data, Direction::fwd}));
  EXPECT_EQ(parse_directions("all").size(), 3u);
  EXPECT_THROW(parse_directions(""), Error);
}

TEST(RepeatPolicy, StopsOnSettledMedianCapOrCount) {
  RepeatPolicy p;
  p.min_repeats = 3;
  p.max_repeats = 10;
  p.max_seconds = 1;
  p.settle = 0.02;
  EXPECT_FALSE(repeats_done(p, {}));
  EXPECT_FALSE(repeats_done(p, {0.01, 0.01}));                       // below min_repeats
  EXPECT_TRUE(repeats_done(p, {0.01, 0.01, 0.01}));                  // settled
  EXPECT_FALSE(repeats_done(p, {0.01, 0.02, 0.03, 0.04}));           // median still moving
  EXPECT_TRUE(repeats_done(p, {0.6, 0.5}));                          // time cap, even below min
  EXPECT_TRUE(repeats_done(p, {2.0}));                               // one call over the cap
  EXPECT_TRUE(repeats_done(p, std::vector<double>(10, 0.001 * 7)));  // max_repeats
  EXPECT_DOUBLE_EQ(median_of({3, 1, 2, 4}), 2.5);
}

TEST(BenchConvResults, FastestPerLayerAndDirection) {
  std::vector<ConvBenchRow> rows = {
      row("cv1", "a", Direction::fwd, 3), row("cv1", "b", Direction::fwd, 2),
      row("cv1", "a", Direction::bwd_data, 1), row("cv2", "a", Direction::fwd, 5)};
  mark_fastest(rows);
  EXPECT_FALSE(rows[0].fastest);
  EXPECT_TRUE(rows[1].fastest);
  EXPECT_TRUE(rows[2].fastest);
  EXPECT_TRUE(rows[3].fastest);
  EXPECT_EQ(fastest_row(rows, "cv1", Direction::fwd), &rows[1]);
  EXPECT_EQ(fastest_row(rows, "cv1", Direction::bwd_weights), nullptr);
}

// Our fastest against oneDNN's fastest, per layer and direction, and the total where both ran.
TEST(BenchConvResults, OursAgainstOneDnnTakesEachSidesFastest) {
  std::vector<ConvBenchRow> rows = {row("cv1", "mec", Direction::fwd, 4.0), row("cv1", "im2col_gemm", Direction::fwd, 2.0),
                                    row("cv1", "onednn_nchw", Direction::fwd, 3.0),
                                    row("cv1", "onednn_nhwc", Direction::fwd, 1.0),
                                    row("cv2", "mec", Direction::fwd, 5.0)};
  rows[3].config = "blocked=0,winograd=0,impl=1 (jit:avx2)";
  std::ostringstream out;
  print_onednn_comparison(out, rows, {{"test", "cv1", {}}, {"test", "cv2", {}}}, {Direction::fwd});
  const std::string text = out.str();
  EXPECT_NE(text.find("cv1      fwd         im2col_gemm"), std::string::npos) << text;
  EXPECT_NE(text.find("onednn_nhwc blocked=0,winograd=0,impl=1 (jit:avx2)"), std::string::npos) << text;
  EXPECT_NE(text.find(" 0.50\n"), std::string::npos) << text;  // oneDNN's 1 ms over our 2
  EXPECT_NE(text.find("cv2      fwd         mec"), std::string::npos) << text;
  EXPECT_NE(text.find("total over the 1 layer x direction pairs both ran: ours 2.000 ms, oneDNN 1.000 ms, ratio 0.50"),
            std::string::npos) << text;
  std::ostringstream none;
  print_onednn_comparison(none, {row("cv1", "mec", Direction::fwd, 4.0)}, {{"test", "cv1", {}}}, {Direction::fwd});
  EXPECT_EQ(none.str(), "") << "no oneDNN rows, no table";
}

TEST(BenchConvResults, CsvColumnsAndQuoting) {
  ConvBenchRow r = row("cv1", "mec", Direction::bwd_data, 2);
  r.config = "T=100,S=32";
  r.workspace_bytes = 4096;
  r.peak_bytes = 8192;
  r.pytorch_ms = 4;
  r.fastest = true;
  const std::string csv = conv_bench_csv({r});
  const std::string header = csv.substr(0, csv.find('\n'));
  EXPECT_EQ(header.rfind("layer,solver,direction,batch,median_ms,gflops,workspace_bytes,peak_bytes,"
                         "config,pytorch_ms,ratio,fastest,pytorch_peak_bytes",
                         0),
            0u);
  EXPECT_NE(csv.find("\ncv1,mec,bwd_data,8,2.000000,1.000,4096,8192,\"T=100,S=32\",4.000000,"
                     "2.0000,1,,NCHW,5,"),
            std::string::npos)
      << csv;
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
}

TEST(PytorchProtocol, RequestsAndReplies) {
  ConvProblem p;
  p.dir = Direction::bwd_weights;
  p.mb = 8, p.ic = 3, p.ih = 227, p.iw = 227, p.oc = 96, p.kh = 11, p.kw = 11, p.sh = 4, p.sw = 4;
  RepeatPolicy r;
  EXPECT_EQ(pytorch_time_request(p, r),
            "time bwd_weights 8 3 227 227 96 11 11 4 4 0 0 1 1 5 50 1 0.02");
  EXPECT_EQ(pytorch_peak_request(p), "peak 8 3 227 227 96 11 11 4 4 0 0 1");
  const PytorchTiming t = parse_pytorch_timing("ok 2.5 2.0 3.0 7");
  EXPECT_DOUBLE_EQ(t.median_ms, 2.5);
  EXPECT_EQ(t.runs, 7);
  EXPECT_EQ(parse_pytorch_peak("ok 300 100 200").peak_bytes, 300u);
  EXPECT_THROW(parse_pytorch_timing("error RuntimeError: boom"), Error);
  EXPECT_THROW(parse_pytorch_timing("ok 2.5"), Error);
}

TEST(MecMemory, PaperFormulas) {
  ConvProblem cv1;  // the MEC paper's cv1 at batch 1: 227x227x3, 11x11 stride 4 -> 55x55
  cv1.ic = 3, cv1.ih = 227, cv1.iw = 227, cv1.oc = 96, cv1.kh = 11, cv1.kw = 11, cv1.sh = 4,
  cv1.sw = 4;
  EXPECT_EQ(paper_im2col_elements(cv1), 55 * 55 * 11 * 11 * 3);
  EXPECT_EQ(paper_mec_elements(cv1), 55 * 227 * 11 * 3);
}

}  // namespace
}  // namespace tunecnn
