// Role: what a CURVE key may do on the bus (docs/explanation/security.md). A key's role is the
// `role` of its public key file in a server's allow-list (allow_list.hpp), never what the client
// claims.
//
//   viewer    the control socket's reads (ls, show, status, watch, best, export, logs) and the
//             event stream
//   operator  everything a viewer may, plus the control socket's changes (run, stop, pause,
//             resume, add, set-resources, interrupt, resume experiments, working_dir uploads)
//   worker    a trial-worker: the scheduler's worker socket, the checkpoint-store's checkpoint
//             calls, resource-manager registration and heartbeats
//   service   the services among themselves: scheduler <-> checkpoint-store (journal),
//             scheduler <-> resource-manager (placement, node events)
//   searcher  an external searcher's server key (the scheduler connects to it)
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace tunebus::bus {

enum class Role : uint8_t { kViewer, kOperator, kWorker, kService, kSearcher };

/// "viewer", "operator", "worker", "service", "searcher".
std::string_view RoleName(Role role);
/// The role named `name` (as RoleName writes it), or nullopt.
std::optional<Role> ParseRole(std::string_view name);
/// "viewer, operator, worker, service, searcher": for error messages.
std::string RoleNames();

/// A set of roles (a bitmask): who may use a socket or send a message type.
class RoleSet {
 public:
  constexpr RoleSet() = default;
  constexpr RoleSet(std::initializer_list<Role> roles) {
    for (Role r : roles) bits_ |= Bit(r);
  }
  /// Every role: a message any authenticated key may send.
  static constexpr RoleSet Any() {
    return {Role::kViewer, Role::kOperator, Role::kWorker, Role::kService, Role::kSearcher};
  }
  constexpr bool Contains(Role role) const { return (bits_ & Bit(role)) != 0; }
  constexpr bool operator==(const RoleSet&) const = default;
  /// "operator" or "viewer or operator": the roles a refused request needs.
  std::string ToString() const;

 private:
  static constexpr uint8_t Bit(Role r) { return uint8_t(1u << uint8_t(r)); }
  uint8_t bits_ = 0;
};

/// The control socket's reads and the event stream.
inline constexpr RoleSet kViewers{Role::kViewer, Role::kOperator};
/// The control socket's changes.
inline constexpr RoleSet kOperators{Role::kOperator};

}  // namespace tunebus::bus
