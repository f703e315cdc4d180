// Every server socket's ZAP domain (security.hpp): who may connect where. Message types narrow
// these further in each service's handler table (MessageDispatcher::On with roles).
//
//   socket             bound by           roles that may connect
//   control            scheduler          viewer, operator
//   events             scheduler          viewer, operator, service
//   workers            scheduler          worker
//   resource-manager   resource-manager   worker (registration, heartbeats), service
//   node-events        resource-manager   service
//   checkpoint-store   checkpoint-store   worker (checkpoints), service (journal)
#pragma once

#include "libs/bus/security.hpp"

namespace tunebus::bus {

inline const Domain kControlDomain{"control", kViewers};
inline const Domain kEventsDomain{"events", {Role::kViewer, Role::kOperator, Role::kService}};
inline const Domain kWorkersDomain{"workers", {Role::kWorker}};
inline const Domain kResourceManagerDomain{"resource-manager", {Role::kWorker, Role::kService}};
inline const Domain kNodeEventsDomain{"node-events", {Role::kService}};
inline const Domain kCheckpointStoreDomain{"checkpoint-store", {Role::kWorker, Role::kService}};

/// The servers' key names: a client finds `<keys-dir>/<name>.key` (ServerKey).
inline const ServerKey kSchedulerKey{"scheduler", ""};
inline const ServerKey kResourceManagerKey{"resource-manager", ""};
inline const ServerKey kCheckpointStoreKey{"checkpoint-store", ""};

}  // namespace tunebus::bus
