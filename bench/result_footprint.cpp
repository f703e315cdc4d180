// The heap footprint of a trial's last result as the scheduler holds it (Trial::SetLastResult:
// msgpack bytes in one std::string), for the memory benchmark's "per trial plus its last
// result" split (bench/e2e.py). Reads one JSON object per line on stdin, keeps 1,000 stored
// copies of each, and prints {"results": N, "bytes_per_result": B, "msgpack_bytes": M}: the
// mean bytes malloc handed out (mallinfo2().uordblks) per copy, and the encoded size.
#include <malloc.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libs/core/trial.hpp"

int main() {
  constexpr size_t kCopies = 1000;
  std::vector<std::string> lines;
  for (std::string line; std::getline(std::cin, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  std::vector<nlohmann::json> parsed;
  for (const std::string& line : lines) parsed.push_back(nlohmann::json::parse(line));
  std::vector<tunebus::Trial> kept(lines.size() * kCopies);
  size_t encoded = 0;
  const size_t before = mallinfo2().uordblks;
  for (size_t i = 0; i < kept.size(); ++i) kept[i].SetLastResult(parsed[i / kCopies]);
  const size_t after = mallinfo2().uordblks;
  for (const auto& t : kept) encoded += t.last_result_msgpack.size();
  const double per = kept.empty() ? 0.0 : double(after - before) / double(kept.size());
  std::cout << nlohmann::json{{"results", lines.size()},
                              {"bytes_per_result", per},
                              {"msgpack_bytes",
                               kept.empty() ? 0.0 : double(encoded) / double(kept.size())}}
                   .dump()
            << "\n";
  return lines.empty() ? 1 : 0;
}
