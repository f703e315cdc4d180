// Enum names: the spelling of an enum's values on the wire and in files, as one table per enum,
// and the two lookups every enum's Name()/Parse() pair is built from. Code holds the enum; the
// strings exist only where a message, a journal record or an experiment file is read or written.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "libs/core/status.hpp"

namespace tunebus {

/// One row of an enum's name table: a value and its spelling.
template <typename E>
struct EnumName {
  E value;
  const char* name;
};

/// The spelling of `value` in `table`; "" for a value the table lacks.
template <typename E, size_t N>
constexpr const char* NameIn(const EnumName<E> (&table)[N], E value) {
  for (const EnumName<E>& row : table) {
    if (row.value == value) return row.name;
  }
  return "";
}

/// The value spelled `word` in `table` (exact spelling); nullopt for a word the table lacks.
template <typename E, size_t N>
constexpr std::optional<E> FindIn(const EnumName<E> (&table)[N], std::string_view word) {
  for (const EnumName<E>& row : table) {
    if (row.name == word) return row.value;
  }
  return std::nullopt;
}

/// The value spelled `word` in `table` (exact spelling). `what` names the concept in the error.
/// Errors: InvalidArgument "unknown <what> '<word>' (expected a, b or c)".
template <typename E, size_t N>
Result<E> ParseIn(const EnumName<E> (&table)[N], std::string_view word, std::string_view what) {
  if (std::optional<E> value = FindIn(table, word)) return *value;
  std::string expected;
  for (size_t i = 0; i < N; ++i) {
    expected += i == 0 ? "" : (i + 1 == N ? " or " : ", ");
    expected += *table[i].name != '\0' ? table[i].name : "\"\"";
  }
  return Status::InvalidArgument(
      fmt::format("unknown {} '{}' (expected {})", what, word, expected));
}

}  // namespace tunebus
