// CSV (RFC 4180) field quoting, shared by the scheduler's progress.csv and `tunectl export`.
#pragma once

#include <string>
#include <string_view>

namespace tunebus {

/// `text` as one CSV field: unchanged unless it holds a comma, a quote or a line break; then in
/// double quotes with every quote doubled.
std::string CsvQuote(std::string_view text);
/// The same, appended to `out`.
void AppendCsvField(std::string_view text, std::string& out);

}  // namespace tunebus
