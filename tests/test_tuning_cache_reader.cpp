// The tuning cache's two readers (autotune/tuning_cache_format.h): the fast reader of the layout
// the writer uses and yaml-cpp give the same cache, warnings and errors for every text; the fast
// one reads all that the writer writes (else `predict` loses its speed unnoticed) and hand edits
// that keep the layout, and leaves every other text to yaml-cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "autotune/tuning_cache.h"
#include "autotune/tuning_cache_format.h"
#include "autotune/yaml_node.h"
#include "core/error.h"

namespace tunecnn {
namespace {

TuningEntry entry(const std::string& key, const std::string& solver, int runs) {
  TuningEntry e;
  e.key = key;
  e.solver = solver;
  e.config = TuneConfig{{{"T", 100}, {"chunk", 4}}};
  e.layout = Layout::NCHW;
  e.candidates.push_back({solver, e.config, Layout::NCHW, 1.25, 0.0625, runs, 4096, true});
  e.candidates.push_back({"im2col_gemm", {}, Layout::NHWC, 0.1, 1e-3, runs, 123456789, false});
  e.candidates.push_back({"cudnn", TuneConfig{{{"algo", 0}}}, Layout::CHWN, 3.0000000000000004, 0, 0, 64, true, false});
  e.provenance = {"host-a", "2026-11-27T12:56:24Z", "0.1.0"};
  return e;
}

// Two CPU sections and a GPU one, with thresholds, bandwidths, dates and an entry without
// candidates: every construct the writer emits.
std::string written_cache() {
  const std::map<std::string, std::string> cpu = {
      {"model", "Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz"}, {"isa", "sse4_2 avx avx2 fma"}, {"threads_used", "2"},
      {"blas", "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH MAX_THREADS=64"}};
  TuningCache cache;
  cache.put("cpu-0000000000000001", cpu, entry("conv fwd mb1 ic3 ih32 iw32 oc8 kh3 kw3 sh1 sw1 ph1 pw1 g1", "mec", 10));
  cache.put("cpu-0000000000000001", cpu, entry("pool fwd mb1 c8 ih32 iw32 kh2 kw2 sh2 sw2 max", "mec", 3));
  TuningEntry bare = entry("softmax fwd n1 c10", "direct", 1);
  bare.candidates.clear();
  bare.config = {};
  cache.put("cpu-0000000000000001", cpu, bare);
  DeviceThresholds t;
  t.mec_t = 8;
  t.ct = 64;
  t.nt = 128;
  t.transform_gbps = {{"NCHW>CHWN", 42.068552831050354}, {"CHWN>NCHW", 0.1 + 0.2}, {"NHWC>NCHW", 0}};
  cache.set_thresholds("cpu-0000000000000001", cpu, t);
  cache.mark_used("cpu-0000000000000001", "2026-11-28");
  cache.put("cpu-00000000000000ff", {{"model", "other"}}, entry("conv fwd mb1 ic3 ih8 iw8 oc4 kh3 kw3 sh1 sw1 ph1 pw1 g1", "direct", 2));
  cache.put("cuda-8405619955f5529e", {{"name", "CUDA emulation on the host"}, {"cuda_runtime", "13.0"}},
            entry("conv bwd_data mb64 ic16 ih14 iw14 oc16 kh5 kw5 sh1 sw1 ph2 pw2 g1", "cudnn", 4));
  return cache.to_yaml();
}

// What a reader made of a text: the cache and its warnings, or the error.
struct Reading {
  TuningCache cache;
  std::vector<std::string> warnings;
  std::string error;
  bool operator==(const Reading&) const = default;
};

Reading read_with(TuningCacheReader reader, const std::string& text) {
  Reading r;
  try {
    r.cache = parse_tuning_cache_with(reader, text, "t.yaml", r.warnings,
                                      [](std::string_view solver) { return solver != "warp_drive"; });
  } catch (const Error& e) {
    r.error = e.message();
  }
  return r;
}

std::string describe(const Reading& r) {
  std::string out = r.error.empty() ? "parsed, " + std::to_string(r.cache.devices().size()) + " devices" : r.error;
  for (const std::string& w : r.warnings) out += "\n  warning: " + w;
  return out;
}

// Whether both readers agree on `text`; says how they differ when not.
::testing::AssertionResult read_alike(const std::string& text) {
  const Reading fast = read_with(TuningCacheReader::fastest, text);
  const Reading yaml_cpp = read_with(TuningCacheReader::yaml_cpp, text);
  if (fast == yaml_cpp) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "the fast reader: " << describe(fast) << "\nyaml-cpp: " << describe(yaml_cpp)
                                       << "\nthe text:\n"
                                       << text;
}

bool read_fast(const std::string& text) {
  return read_emitted_yaml(text).has_value();
}

// `text` with the first `from` at or after the first `after` replaced by `to`.
std::string edited(std::string text, const std::string& from, const std::string& to, const std::string& after = "") {
  const std::size_t at = text.find(from, text.find(after));
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(TuningCacheReader, WhatTheWriterWritesIsReadFast) {
  const std::string text = written_cache();
  EXPECT_TRUE(read_fast(text)) << text;
  EXPECT_TRUE(read_alike(text));
  const Reading reading = read_with(TuningCacheReader::fastest, text);
  EXPECT_EQ(reading.cache.to_yaml(), text);
  EXPECT_TRUE(reading.warnings.empty());
}

// A person's edits that keep the layout: bad values (each entry skipped with the same warning),
// repeated keys and sections, comments, other spellings of numbers and bools, and whole-file
// errors.
TEST(TuningCacheReader, HandEditsThatKeepTheLayoutAreReadFastAndAlike) {
  const std::string text = written_cache();
  const std::string pool = "key: pool fwd";
  const std::vector<std::string> edits = {
      edited(text, "solver: mec", "solver: warp_drive", pool),
      edited(text, "runs: 3", "runs: many", pool),
      edited(text, "layout: NCHW", "layout: NWHC", pool),
      edited(text, "median_ms: 1.25", "median_ms: .nan", pool),
      edited(text, "spread_ms: 0.0625", "spread_ms: -0.0625", pool),
      edited(text, "runs: 3", "runs: 0x10", pool),
      edited(text, "runs: 3", "runs: 010", pool),
      edited(text, "workspace_bytes: 4096", "workspace_bytes: -1", pool),
      edited(text, "correct: true", "correct: yes", pool),
      edited(text, "correct: true", "correct: True", pool),
      edited(text, "median_ms: 1.25", "median_ms: 1e3", pool),
      edited(text, "median_ms: 1.25", "median_ms: 1.25e-320", pool),
      edited(text, "NCHW>CHWN: 42.068552831050354", "NCHW>CHWN: .inf"),
      edited(text, "NCHW>CHWN: 42.068552831050354", "NCHW>HWCN: 1"),
      edited(text, "mec_t: 8", "mec_t: eight"),
      edited(text, "last_used: 2026-11-28", "last_used: 2026-11-28x"),
      edited(text, "runs: 3\n", "runs: 3\n            runs: 4\n", pool),              // a repeated key
      edited(text, "    thresholds:\n", "    thresholds:\n      mec_t: 9\n"),          // the first wins
      edited(text, "  - id: cpu-00000000000000ff", "  - id: cpu-0000000000000001"),  // a second section
      edited(text, "      - key: pool", "# a comment\n\n      - key: pool"),
      edited(text, "        provenance:\n", "        note: checked by hand\n        provenance:\n", pool),
      edited(text, "        candidates:\n          []\n", ""),
      edited(text, "        candidates:\n          []\n", "        candidates: []\n"),
      edited(text, "        candidates:\n          []\n", "        candidates:\n          {}\n"),
      edited(text, "          host: host-a\n", "", pool),
      edited(text, "    fingerprint:\n      model: other\n", "    fingerprint: {}\n"),
      edited(text, "    fingerprint:\n      model: other\n", "    fingerprint: []\n"),
      edited(text, "    entries:\n      - key: conv fwd mb1 ic3 ih8", "    entries: []\n    more:\n      - key: conv fwd mb1 ic3 ih8"),
      edited(text, "version: 1", "version: 2"),
      edited(text, "version: 1", "version: 0"),
      edited(text, "format: tunecnn-tuning-cache", "format: something-else"),
      edited(text, "# end of tunecnn-tuning-cache", "# the end"),
      edited(text, "devices:\n", "devices: {}\nold_devices:\n"),
      edited(text, "devices:\n", "devices: 3\nold_devices:\n"),
  };
  for (const std::string& e : edits) {
    EXPECT_TRUE(read_fast(e)) << e;
    EXPECT_TRUE(read_alike(e));
  }
}

// Texts whose meaning the fast reader does not vouch for go to yaml-cpp: quotes, flow style,
// tabs, CRs, anchors, nulls, another indentation, a scalar over two lines, a comment after a
// value, trailing spaces, a document marker, bytes beyond ASCII.
TEST(TuningCacheReader, OtherLayoutsGoToYamlCpp) {
  const std::string text = written_cache();
  const std::string pool = "key: pool fwd";
  const std::vector<std::string> edits = {
      edited(text, "solver: mec", "solver: \"mec\"", pool),
      edited(text, "solver: mec", "solver: 'mec'", pool),
      edited(text, "config:\n            T: 100\n            chunk: 4\n", "config: {T: 100, chunk: 4}\n", pool),
      edited(text, "runs: 3", "runs:\t3", pool),
      edited(text, "runs: 3", "runs: 3\r", pool),
      edited(text, "runs: 3", "runs: &n 3", pool),
      edited(text, "runs: 3", "runs: *n", pool),
      edited(text, "runs: 3", "runs: null", pool),
      edited(text, "runs: 3", "runs: ~", pool),
      edited(text, "runs: 3", "runs:", pool),
      edited(text, "runs: 3", "runs: 3 # measured", pool),
      edited(text, "runs: 3", "runs: 3  ", pool),
      edited(text, "runs: 3", "runs:  3", pool),
      edited(text, "runs: 3", "runs: !!str 3", pool),
      edited(text, "host: host-a", "host: host-\n            a", pool),
      edited(text, "host: host-a", "host: h\xc3\xb4te", pool),
      edited(text, "      - key: pool", "      -   key: pool"),
      edited(text, "    entries:\n      - key: conv fwd mb1 ic3 ih8", "    entries:\n    - key: conv fwd mb1 ic3 ih8"),
      edited(text, "  - id: cpu-00000000000000ff\n    fingerprint:", "  - id: cpu-00000000000000ff\n     fingerprint:"),
      "---\n" + text,
      edited(text, "format:", "? format\n:"),
  };
  for (const std::string& e : edits) {
    EXPECT_FALSE(read_fast(e)) << e;
    EXPECT_TRUE(read_alike(e));
  }
}

// Numbers and bools the fast reader converts itself, or hands to yaml-cpp's converter, all read
// as yaml-cpp's as<T>() reads them: in an int, an unsigned, a double and a bool field.
TEST(TuningCacheReader, NumbersAndBoolsReadAsYamlCppReadsThem) {
  const std::string text = written_cache();
  const std::string pool = "key: pool fwd";
  const char* values[] = {"0",     "-0",    "00",   "007",    "08",     "0x1F",   "0X1f",      "1e3",   "1E3",
                          "1.",    ".5",    "-.5",  "5.0e-1", "1e400",  "1e-310", "1e-400",    "-1e400", ".inf",
                          "-.inf", ".NaN",  "1_0",  "1,5",    "12abc",  "0b101",  "2147483647", "2147483648",
                          "-2147483649", "18446744073709551615", "18446744073709551616", "-1", "true", "false",
                          "True",  "TRUE",  "yes",  "No",     "on",     "OFF",    "y",         "n",     "tRue",
                          "0.30000000000000004", "3.0000000000000004", "4.9406564584124654e-324"};
  for (const char* value : values) {
    for (const std::string field : {"runs: 3", "workspace_bytes: 4096", "median_ms: 1.25", "correct: true"}) {
      const std::string e = edited(text, field, field.substr(0, field.find(':') + 2) + value, pool);
      EXPECT_TRUE(read_fast(e)) << value;
      EXPECT_TRUE(read_alike(e)) << field << " -> " << value;
    }
  }
}

std::size_t line_start(const std::string& text, std::size_t at) {
  const std::size_t newline = at == 0 ? std::string::npos : text.rfind('\n', at - 1);
  return newline == std::string::npos ? 0 : newline + 1;
}

// One small random change to the written text: a character inserted, removed or replaced, a line
// removed, repeated, indented further or moved above the one before.
std::string mutated(const std::string& text, std::mt19937& rng) {
  static constexpr std::string_view kChars = " :-#{}[]'\"&*!|>?,%@~\t\n\r.0a";
  const auto pick = [&rng](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
  std::string out = text;
  const std::size_t at = pick(out.size());
  const std::size_t start = line_start(out, at);
  const std::size_t end = std::min(out.find('\n', at), out.size() - 1) + 1;
  const std::string line = out.substr(start, end - start);
  switch (pick(7)) {
    case 0: out.insert(at, 1, kChars[pick(kChars.size())]); break;
    case 1: out.erase(at, 1); break;
    case 2: out[at] = kChars[pick(kChars.size())]; break;
    case 3: out.erase(start, end - start); break;
    case 4: out.insert(start, line); break;
    case 5: out.insert(start, std::string(pick(4) + 1, ' ')); break;
    default:
      out.erase(start, end - start);
      out.insert(start == 0 ? 0 : line_start(out, start - 1), line);
  }
  return out;
}

// Thousands of near-copies of a written cache, each read by both readers: the fast reader must
// take a good share of them (else this compares yaml-cpp with itself) and agree on every one.
TEST(TuningCacheReader, MutatedCachesReadAlike) {
  const std::string text = written_cache();
  std::mt19937 rng(28);
  int fast = 0, total = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string m = mutated(text, rng);
    if (i % 3 == 0) m = mutated(m, rng);
    ++total;
    fast += read_fast(m);
    ASSERT_TRUE(read_alike(m)) << "mutant #" << i;
  }
  EXPECT_GT(fast, total / 4) << fast << " of " << total << " read fast";
}

}  // namespace
}  // namespace tunecnn
