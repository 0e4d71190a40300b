#pragma once
// The per-epoch CSV log. The whole file is rewritten atomically after every epoch, so it is never
// half-written; a resumed run keeps the rows of the epochs it does not redo.
#include <filesystem>
#include <string>
#include <vector>

#include "apps/training/trainer.h"

namespace tunecnn {

class CsvLog {
 public:
  // With keep_epochs >= 0, rows of epochs <= keep_epochs already in the file are kept.
  CsvLog(std::filesystem::path path, int keep_epochs);
  void append(const EpochMetrics& metrics);

 private:
  std::filesystem::path path_;
  std::vector<std::string> rows_;
};

}  // namespace tunecnn
