#pragma once
// Error-message checks shared by the data readers' suites.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"

namespace tunecnn::testing {

// Runs fn and expects an Error whose message holds every given word (a file name, the problem).
template <class Fn>
void expect_error(Fn&& fn, const std::vector<std::string>& words) {
  try {
    fn();
    ADD_FAILURE() << "no Error thrown; expected one mentioning " << ::testing::PrintToString(words);
  } catch (const Error& e) {
    const std::string what = e.what();
    for (const std::string& word : words)
      EXPECT_NE(what.find(word), std::string::npos) << "'" << word << "' missing from: " << what;
  }
}

}  // namespace tunecnn::testing
