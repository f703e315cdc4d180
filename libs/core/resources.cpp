#include "libs/core/resources.hpp"

#include <fmt/format.h>

#include <cassert>
#include <cmath>
#include <limits>

namespace tunebus {

Result<Resources> Resources::FromAmounts(const std::map<std::string, double>& amounts) {
  Resources r;
  for (const auto& [key, amount] : amounts) {
    if (!std::isfinite(amount) || amount < 0) {
      return Status::InvalidArgument(
          fmt::format("resource '{}' must be a finite number >= 0, got {}", key, amount));
    }
    const double scaled = std::round(amount * kScale);
    if (scaled > double(std::numeric_limits<int64_t>::max() / 4)) {
      return Status::InvalidArgument(fmt::format("resource '{}' is too large: {}", key, amount));
    }
    r.set_units(key, int64_t(scaled));
  }
  return r;
}

Result<Resources> Resources::FromUnits(const std::map<std::string, int64_t>& units) {
  Resources r;
  for (const auto& [key, u] : units) {
    if (u < 0)
      return Status::InvalidArgument(fmt::format("resource '{}' has negative units {}", key, u));
    r.set_units(key, u);
  }
  return r;
}

int64_t Resources::units(std::string_view key) const {
  auto it = units_.find(key);
  return it == units_.end() ? 0 : it->second;
}

void Resources::set_units(const std::string& key, int64_t units) {
  if (units == 0) {
    units_.erase(key);
  } else {
    units_[key] = units;
  }
}

bool Resources::FitsIn(const Resources& available) const {
  for (const auto& [key, u] : units_) {
    if (u > available.units(key)) return false;
  }
  return true;
}

Resources& Resources::operator+=(const Resources& other) {
  for (const auto& [key, u] : other.units_) units_[key] += u;
  return *this;
}

Resources& Resources::operator-=(const Resources& other) {
  assert(other.FitsIn(*this));
  for (const auto& [key, u] : other.units_) {
    auto it = units_.find(key);
    if (it == units_.end()) continue;
    it->second -= u;
    if (it->second <= 0) units_.erase(it);
  }
  return *this;
}

std::map<std::string, double> Resources::ToAmounts() const {
  std::map<std::string, double> out;
  for (const auto& [key, u] : units_) out[key] = double(u) / kScale;
  return out;
}

std::string Resources::ToString() const {
  if (units_.empty()) return "nothing";
  std::string s;
  for (const auto& [key, u] : units_) {
    if (!s.empty()) s += ", ";
    s += fmt::format("{}={}", key, double(u) / kScale);
  }
  return s;
}

}  // namespace tunebus
