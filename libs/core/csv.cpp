#include "libs/core/csv.hpp"

namespace tunebus {

std::string CsvQuote(std::string_view text) {
  if (text.find_first_of(",\"\n") == std::string_view::npos) return std::string(text);
  std::string q;
  q.reserve(text.size() + 8);
  q.push_back('"');
  for (char c : text) {
    if (c == '"') q.push_back('"');
    q.push_back(c);
  }
  q.push_back('"');
  return q;
}

}  // namespace tunebus
