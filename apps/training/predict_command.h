#pragma once
// `predict`: a trained checkpoint's top classes for image files, with their names and
// probabilities, each image read as the data set it was trained on reads its test examples.
#include <ostream>
#include <string>
#include <vector>

#include "apps/common/cli.h"

namespace tunecnn {

struct Prediction {
  std::string file;
  std::vector<std::pair<std::string, double>> top;  // class name, probability; most likely first
};

CommandLine predict_command_line();
// Throws UsageError for a bad command line, Error naming the file for anything else.
std::vector<Prediction> run_predict(const CommandLine& cli, std::ostream& out);

}  // namespace tunecnn
