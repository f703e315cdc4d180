#include "libs/core/csv.hpp"

namespace tunebus {

void AppendCsvField(std::string_view text, std::string& out) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) {
    out.append(text);
    return;
  }
  out.push_back('"');
  for (char c : text) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
}

std::string CsvQuote(std::string_view text) {
  std::string q;
  AppendCsvField(text, q);
  return q;
}

}  // namespace tunebus
