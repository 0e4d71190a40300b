#pragma once
// `evaluate`: a trained checkpoint scored on a data set's evaluation view (its test split, centre
// crops where the data is cropped): loss, top-1, top-5 and each class's accuracy.
#include <ostream>

#include "apps/common/cli.h"
#include "apps/training/classification_metrics.h"

namespace tunecnn {

CommandLine evaluate_command_line();
// Throws UsageError for a bad command line, Error naming the file for anything else.
ClassificationMetrics run_evaluate(const CommandLine& cli, std::ostream& out);

}  // namespace tunecnn
