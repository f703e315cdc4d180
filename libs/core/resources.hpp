// Resources: named quantities a trial asks for and a worker offers (cpu, gpu, memory, custom).
//
// Quantities are fixed-point with kScale units per whole (1/10000), so 0.33 + 0.33 + 0.33 GPU
// is exactly 9900 units and never drifts below zero or above capacity (DESIGN.md, "Trial
// lifecycle"). `memory` is counted in bytes like every other key (also fixed-point). A key that
// is absent means zero.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "libs/core/status.hpp"

namespace tunebus {

class Resources {
 public:
  /// Units per whole: gpu 0.5 is 5000 units.
  static constexpr int64_t kScale = 10000;

  Resources() = default;

  /// Builds from user amounts, rounding each to the nearest unit.
  /// Errors: InvalidArgument naming the key if an amount is negative, not finite, or would
  /// overflow the fixed-point range.
  static Result<Resources> FromAmounts(const std::map<std::string, double>& amounts);
  /// Builds from raw units (wire format). Errors: InvalidArgument if a value is negative.
  static Result<Resources> FromUnits(const std::map<std::string, int64_t>& units);

  int64_t units(std::string_view key) const;
  double amount(std::string_view key) const { return double(units(key)) / kScale; }
  /// Sets a key to `units` (>= 0). Zero removes the key.
  void set_units(const std::string& key, int64_t units);

  /// True if every quantity here is <= the same quantity in `available`.
  bool FitsIn(const Resources& available) const;
  /// True if no key is present (all zero).
  bool empty() const { return units_.empty(); }

  /// Adds every quantity of `other`.
  Resources& operator+=(const Resources& other);
  /// Subtracts `other`. REQUIRES: other.FitsIn(*this) (checked: keys clamp at zero never
  /// happens silently; the caller must check first, this asserts in debug builds).
  Resources& operator-=(const Resources& other);
  bool operator==(const Resources& other) const { return units_ == other.units_; }

  const std::map<std::string, int64_t, std::less<>>& units_map() const { return units_; }
  /// Amounts in whole units for display and JSON: {"cpu": 1, "gpu": 0.5}.
  std::map<std::string, double> ToAmounts() const;
  /// "cpu=1, gpu=0.5" (keys sorted), or "nothing" when empty.
  std::string ToString() const;

 private:
  std::map<std::string, int64_t, std::less<>> units_;
};

}  // namespace tunebus
