#include "libs/core/csv.hpp"

namespace tunebus {

void AppendCsvField(std::string_view text, std::string& out) {
  // A plain loop: find_first_of calls memchr on the set once per character.
  bool plain = true;
  for (const char c : text) plain = plain && c != ',' && c != '"' && c != '\r' && c != '\n';
  if (plain) {
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
