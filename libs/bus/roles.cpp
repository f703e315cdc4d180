#include "libs/bus/roles.hpp"

#include <array>
#include <utility>

namespace tunebus::bus {

namespace {
constexpr std::array<std::pair<Role, std::string_view>, 5> kNames{{{Role::kViewer, "viewer"},
                                                                   {Role::kOperator, "operator"},
                                                                   {Role::kWorker, "worker"},
                                                                   {Role::kService, "service"},
                                                                   {Role::kSearcher, "searcher"}}};
}  // namespace

std::string_view RoleName(Role role) {
  for (const auto& [r, name] : kNames)
    if (r == role) return name;
  return "unknown";
}

std::optional<Role> ParseRole(std::string_view name) {
  for (const auto& [r, n] : kNames)
    if (n == name) return r;
  return std::nullopt;
}

std::string RoleNames() {
  std::string out;
  for (const auto& [r, name] : kNames) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

std::string RoleSet::ToString() const {
  std::string out;
  for (const auto& [r, name] : kNames) {
    if (!Contains(r)) continue;
    if (!out.empty()) out += " or ";
    out += name;
  }
  return out.empty() ? "no role" : out;
}

}  // namespace tunebus::bus
