#include "apps/training/csv_log.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "core/atomic_file.h"

namespace tunecnn {
namespace {
constexpr const char* kHeader = "epoch,train_loss,train_acc,test_loss,test_acc,test_top5,images_per_s,seconds,lr";
}

CsvLog::CsvLog(std::filesystem::path path, int keep_epochs) : path_(std::move(path)) {
  std::ifstream in(path_);
  std::string line;
  if (keep_epochs <= 0 || !std::getline(in, line) || line != kHeader) return;
  while (std::getline(in, line)) {
    const long epoch = std::strtol(line.c_str(), nullptr, 10);
    if (epoch >= 1 && epoch <= keep_epochs) rows_.push_back(line);
  }
}

void CsvLog::append(const EpochMetrics& m) {
  char row[256];
  std::snprintf(row, sizeof row, "%d,%.6f,%.6f,%.6f,%.6f,%.6f,%.1f,%.3f,%.6g", m.epoch, m.train_loss,
                m.train_acc, m.test_loss, m.test_acc, m.test_top5, m.images_per_s, m.seconds, m.lr);
  rows_.emplace_back(row);
  std::string text = std::string(kHeader) + "\n";
  for (const std::string& r : rows_) text += r + "\n";
  write_file_atomically(path_, text);
}

}  // namespace tunecnn
