// ResultRowsCutter and ReadResultRows (services/scheduler/control/result_page.hpp): the page a
// list_results request gets from a trial's result.json, whatever chunks the file arrives in.
#include "services/scheduler/control/result_page.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace tunebus {
namespace {

using json = nlohmann::json;

// Five rows, a blank line, a line that is no object, and a torn last line.
const std::string kText =
    "{\"training_iteration\":1,\"score\":0.5}\n"
    "{\"training_iteration\":2,\"score\":\"a \\\"quoted\\\" } string\"}\n"
    "\n"
    "  {\"training_iteration\":3}\r\n"
    "not a row\n"
    "{\"training_iteration\":4,\"nested\":{\"a\":[1,2]}}\n"
    "{\"training_iteration\":5}\n"
    "{\"training_iter";

ResultRowsPage Cut(const std::string& text, int64_t offset, int64_t limit, size_t max_bytes,
                   size_t chunk) {
  ResultRowsCutter cutter("result.json", offset, limit, max_bytes);
  for (size_t at = 0; at < text.size(); at += chunk) {
    EXPECT_TRUE(cutter.Feed(std::string_view(text).substr(at, chunk)).ok());
  }
  return cutter.Finish();
}

std::vector<int> Iterations(const ResultRowsPage& page) {
  std::vector<int> out;
  for (const json& row : json::parse(page.rows_json)) out.push_back(row["training_iteration"]);
  return out;
}

// The same page whatever the chunks: rows are the complete object lines, in file order.
TEST(ResultRowsCutterTest, RowsAreTheCompleteObjectLinesWhateverTheChunks) {
  for (size_t chunk : {size_t(1), size_t(2), size_t(7), size_t(64), kText.size()}) {
    SCOPED_TRACE(chunk);
    const ResultRowsPage all = Cut(kText, 0, 100, 1 << 20, chunk);
    EXPECT_EQ(all.total, 5);
    EXPECT_EQ(all.rows, 5);
    EXPECT_EQ(Iterations(all), (std::vector<int>{1, 2, 3, 4, 5}));
    EXPECT_EQ(json::parse(all.rows_json)[1]["score"], "a \"quoted\" } string");
    const ResultRowsPage middle = Cut(kText, 1, 2, 1 << 20, chunk);
    EXPECT_EQ(middle.total, 5);
    EXPECT_EQ(Iterations(middle), (std::vector<int>{2, 3}));
  }
}

// A page past the end is empty; the byte bound ends a page after the row that reaches it, with
// at least one row.
TEST(ResultRowsCutterTest, APageEndsAtItsLimitItsBytesOrTheEnd) {
  const ResultRowsPage past = Cut(kText, 5, 10, 1 << 20, 16);
  EXPECT_EQ(past.rows, 0);
  EXPECT_EQ(past.total, 5);
  EXPECT_EQ(past.rows_json, "[]");
  const ResultRowsPage one = Cut(kText, 0, 10, 1, 16);
  EXPECT_EQ(Iterations(one), (std::vector<int>{1}));
  EXPECT_EQ(one.total, 5);
  const ResultRowsPage two = Cut(kText, 0, 10, 40, 16);  // the first row is 37 bytes with "["
  EXPECT_EQ(Iterations(two), (std::vector<int>{1, 2}));
}

// A row of the page that is not JSON is reported with its line; one outside the page is only
// counted.
TEST(ResultRowsCutterTest, ABrokenRowOfThePageIsCorruption) {
  const std::string text = "{\"a\":1}\n{\"a\":,}\n{\"a\":3}\n";
  ResultRowsCutter cutter("t/result.json", 0, 10, 1 << 20);
  const Status s = cutter.Feed(text);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.message(), "t/result.json:2: not a JSON object");
  ResultRowsCutter later("t/result.json", 2, 10, 1 << 20);
  EXPECT_TRUE(later.Feed(text).ok());
  const ResultRowsPage page = later.Finish();
  EXPECT_EQ(page.total, 3);
  EXPECT_EQ(page.rows_json, "[{\"a\":3}]");
}

// The file read: a missing file has no rows; a file larger than one read chunk is read whole.
TEST(ResultRowsCutterTest, ReadResultRowsReadsTheWholeFile) {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "tunebus-result-page-XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const std::string path = pattern + "/result.json";
  auto missing = ReadResultRows(path, 0, 10, 1 << 20);
  ASSERT_TRUE(missing.ok()) << missing.status().ToString();
  EXPECT_EQ(missing->total, 0);
  EXPECT_EQ(missing->rows_json, "[]");
  {
    std::ofstream file(path);
    const std::string padding(200, 'x');
    for (int i = 1; i <= 20000; ++i) {
      file << json{{"training_iteration", i}, {"pad", padding}}.dump() << "\n";
    }
  }
  auto page = ReadResultRows(path, 19998, 10, 1 << 20);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(page->total, 20000);
  EXPECT_EQ(Iterations(*page), (std::vector<int>{19999, 20000}));
  std::filesystem::remove_all(pattern);
}

}  // namespace
}  // namespace tunebus
