// The heap footprint of a trial's last result as the scheduler holds it (an nlohmann::json
// object), for the memory benchmark's "per trial plus its last result" split (bench/e2e.py).
// Reads one JSON object per line on stdin, keeps 1,000 parsed copies of each, and prints
// {"results": N, "bytes_per_result": B}: the mean bytes malloc handed out (mallinfo2().uordblks)
// per copy.
#include <malloc.h>

#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

int main() {
  constexpr size_t kCopies = 1000;
  std::vector<std::string> lines;
  for (std::string line; std::getline(std::cin, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  std::vector<nlohmann::json> kept;
  kept.reserve(lines.size() * kCopies);
  const size_t before = mallinfo2().uordblks;
  for (const std::string& line : lines) {
    for (size_t i = 0; i < kCopies; ++i) kept.push_back(nlohmann::json::parse(line));
  }
  const size_t after = mallinfo2().uordblks;
  const double per = kept.empty() ? 0.0 : double(after - before) / double(kept.size());
  std::cout << nlohmann::json{{"results", lines.size()}, {"bytes_per_result", per}}.dump() << "\n";
  return lines.empty() ? 1 : 0;
}
