// Every seed of fuzz/corpus/<target>/ through its fuzz target's body (fuzz/fuzz_targets.hpp) in
// the ordinary build: a seed that crashes, or a property a target checks (fuzz::Check aborts),
// fails here too, without clang or libFuzzer.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/fuzz_targets.hpp"

namespace tunebus {
namespace {

namespace fs = std::filesystem;

using Body = int (*)(const uint8_t*, size_t);

struct Target {
  const char* name;
  Body body;
};

// Runs every file of fuzz/corpus/<name>/; returns how many ran.
size_t RunCorpus(const Target& t) {
  const fs::path dir = fs::path(TUNEBUS_TEST_SOURCE_DIR) / "fuzz" / "corpus" / t.name;
  size_t ran = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    const std::vector<char> bytes{std::istreambuf_iterator<char>(in),
                                  std::istreambuf_iterator<char>()};
    SCOPED_TRACE(e.path().string());
    EXPECT_EQ(t.body(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), 0);
    ++ran;
  }
  return ran;
}

class FuzzCorpusTest : public ::testing::TestWithParam<Target> {};

TEST_P(FuzzCorpusTest, EverySeedRuns) { EXPECT_GE(RunCorpus(GetParam()), 4u); }

INSTANTIATE_TEST_SUITE_P(Targets, FuzzCorpusTest,
                         ::testing::Values(Target{"message", fuzz::FuzzMessage},
                                           Target{"journal_record", fuzz::FuzzJournalRecord},
                                           Target{"journal_replay", fuzz::FuzzJournalReplay},
                                           Target{"snapshot", fuzz::FuzzSnapshot},
                                           Target{"spec", fuzz::FuzzSpec},
                                           Target{"report_line", fuzz::FuzzReportLine},
                                           Target{"searcher_reply", fuzz::FuzzSearcherReply},
                                           Target{"control", fuzz::FuzzControl}),
                         [](const ::testing::TestParamInfo<Target>& info) {
                           return std::string(info.param.name);
                         });

TEST(FuzzCorpusTest, EveryMessageTypeHasASeed) {
  // FuzzMessage picks the type by the first byte: the corpus holds one seed per type.
  const fs::path dir = fs::path(TUNEBUS_TEST_SOURCE_DIR) / "fuzz" / "corpus" / "message";
  std::vector<bool> seen(256, false);
  size_t types = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    const int first = in.get();
    ASSERT_NE(first, EOF) << e.path();
    if (!seen[first]) ++types;
    seen[first] = true;
  }
  EXPECT_EQ(types, fuzz::kMessageTypeCount);
}

}  // namespace
}  // namespace tunebus
