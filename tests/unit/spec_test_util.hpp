// Helpers of the experiment-file tests (spec_test.cpp, spec_links_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "libs/spec/experiment_spec.hpp"

namespace tunebus::spec_test {

// Raw strings in the tests start with a newline for readability; drop it so the text starts on
// line 1.
inline std::string Yaml(const char* text) {
  std::string s(text);
  return s.starts_with("\n") ? s.substr(1) : s;
}

inline Result<ExperimentSpec> Parse(const std::string& text) {
  return ParseExperimentYaml(text, "/srv/exp", "exp.yaml");
}

// The parse must fail with InvalidArgument and exactly `message`.
inline void ExpectInvalid(const std::string& text, const std::string& message) {
  Result<ExperimentSpec> spec = Parse(text);
  ASSERT_FALSE(spec.ok()) << "parsed but expected: " << message << "\n" << text;
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(spec.status().message(), message) << text;
}

inline const char* kMinimal = "name: e\ntrainable: {builtin: mock}\n";

// A minimal file with a param space, a metric and `search: {type: external}` open for more
// lines of the search map (2-space indented).
inline std::string ExternalSearchBase() {
  return std::string(kMinimal) +
         "param_space:\n"
         "  lr: {loguniform: [0.0001, 0.1]}\n"
         "metric: acc\n"
         "mode: max\n"
         "search:\n"
         "  type: external\n";
}

}  // namespace tunebus::spec_test
