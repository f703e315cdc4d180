// Field lists: a shape's members written once, as a function that calls a visitor with each
// member's JSON key, the member and its flags, and visitors that write the shape or read it:
//
//   template <class T, class V>  // T: Shape or const Shape
//   void VisitShapeFields(T& s, V&& v) {
//     v("name", s.name, fields::kRequired);
//     v("count", s.count, fields::kOmitDefault);
//   }
//
// JsonWriter and JsonReader (here) turn a list into a nlohmann::json object and back; the
// text and msgpack writers live with the shapes that need them (libs/core/trial_view.cpp,
// libs/journal/records.cpp). A list names its keys in sorted order when a writer that streams
// (text, msgpack) must give the bytes of nlohmann's document, whose keys are sorted.
// Values convert through nlohmann's to_json / from_json (libs/core/trial_fields.hpp has the
// trial's types); a std::optional is null (or left out with kOmitDefault) when empty.
#pragma once

#include <cmath>
#include <concepts>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace tunebus::fields {

enum Flags : unsigned {
  kNone = 0,
  kRequired = 1u,       // reading fails without it (nlohmann::json::out_of_range)
  kOmitDefault = 2u,    // left out while at its default value; an absent one reads as the default
  kNullWhenEmpty = 4u,  // a string written as null when empty (the control socket's views)
};

template <class T>
struct IsOptional : std::false_type {};
template <class T>
inline constexpr bool kIsString =
    std::is_same_v<T, std::string> || std::is_same_v<T, std::string_view>;
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

/// True when `v` is at its default: an empty optional or container, else equal to a
/// value-initialized T (a type without == is never at its default).
template <class T>
bool IsDefault(const T& v) {
  if constexpr (IsOptional<T>::value) {
    return !v.has_value();
  } else if constexpr (requires { v.empty(); }) {
    return v.empty();
  } else if constexpr (std::equality_comparable<T>) {
    return v == T{};
  } else {
    return false;
  }
}

/// True when a field with `flags` and value `v` is left out of what a writer writes.
template <class T>
bool Omitted(const T& v, unsigned flags) {
  return (flags & kOmitDefault) != 0 && IsDefault(v);
}

/// Writes each field into `object` (a JSON object; the keys sort themselves).
struct JsonWriter {
  nlohmann::json& object;

  template <class T>
  void operator()(std::string_view key, const T& v, unsigned flags = kNone) const {
    if (Omitted(v, flags)) return;
    nlohmann::json& slot = object[std::string(key)];
    if constexpr (IsOptional<T>::value) {
      slot = v ? nlohmann::json(*v) : nlohmann::json(nullptr);
    } else if constexpr (kIsString<T>) {
      const std::string_view s(v);
      slot = (flags & kNullWhenEmpty) && s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s);
    } else {
      slot = v;
    }
  }
};

/// An integer type other than bool: what GetInteger reads.
template <class T>
concept Integer = std::integral<T> && !std::same_as<T, bool>;

/// `j`'s number as T, range-checked. nlohmann's own get<T>() converts a floating-point value
/// with static_cast, undefined behaviour when T cannot hold it (NaN, inf, 1e300 in a hostile
/// journal, snapshot or message), and wraps an integer T cannot hold. A fraction truncates toward
/// zero, as get<T>() does. Errors: nlohmann::json::type_error 302 when `j` is not a number,
/// out_of_range 406 when T cannot hold it.
template <Integer T>
T GetInteger(const nlohmann::json& j) {
  using Limits = std::numeric_limits<T>;
  bool fits = false;
  if (j.is_number_unsigned()) {
    fits = j.get_ref<const nlohmann::json::number_unsigned_t&>() <= uint64_t(Limits::max());
  } else if (j.is_number_integer()) {
    const int64_t v = j.get_ref<const nlohmann::json::number_integer_t&>();
    fits = std::in_range<T>(v);
  } else if (j.is_number_float()) {
    // [min, max + 1) as doubles: both bounds are powers of two (or 0), so exact.
    const double v = j.get_ref<const nlohmann::json::number_float_t&>();
    fits = v >= double(Limits::min()) && v < double(Limits::max() / 2 + 1) * 2.0;
  } else {
    throw nlohmann::json::type_error::create(
        302, std::string("type must be number, but is ") + j.type_name(), &j);
  }
  if (!fits) {
    throw nlohmann::json::out_of_range::create(
        406, "number " + j.dump() + " is out of range of the field's integer type", &j);
  }
  return j.get<T>();
}

template <class T>
inline constexpr bool kIsIntegerVector = false;
template <Integer T>
inline constexpr bool kIsIntegerVector<std::vector<T>> = true;

/// `j` read as T, with every integer in it read through GetInteger: T is an Integer, a
/// std::vector or std::optional of one, or a type nlohmann reads (its own from_json).
template <class T>
void ReadValue(const nlohmann::json& j, T& v) {
  if constexpr (Integer<T>) {
    v = GetInteger<T>(j);
  } else if constexpr (IsOptional<T>::value) {
    if (j.is_null()) {
      v.reset();
    } else {
      typename T::value_type inner{};
      ReadValue(j, inner);
      v = std::move(inner);
    }
  } else if constexpr (kIsIntegerVector<T>) {
    if (!j.is_array()) {
      throw nlohmann::json::type_error::create(
          302, std::string("type must be array, but is ") + j.type_name(), &j);
    }
    v.clear();
    for (const nlohmann::json& e : j) v.push_back(GetInteger<typename T::value_type>(e));
  } else {
    j.get_to(v);
  }
}

/// What JsonReader does with a field the object lacks (neither kRequired nor kOmitDefault).
enum class Absent {
  kKeep,     // leave the member as it is
  kDefault,  // set it to its default (value-initialized) value
};

/// Reads each field from `object` (ReadValue: integers range-checked). Errors: nlohmann::json
/// exceptions (out_of_range for a missing kRequired field or an integer out of its type's range,
/// type_error for a value of the wrong type), for the caller to catch.
struct JsonReader {
  const nlohmann::json& object;
  Absent absent = Absent::kKeep;

  template <class T>
  void operator()(std::string_view key, T& v, unsigned flags = kNone) const {
    const auto it = object.find(key);
    if (it == object.end()) {
      if (flags & kRequired) (void)object.at(key);  // throws out_of_range naming the key
      if ((flags & kOmitDefault) || absent == Absent::kDefault) v = T{};
      return;
    }
    ReadValue(*it, v);
  }
};

}  // namespace tunebus::fields
