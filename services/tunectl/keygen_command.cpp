// tunectl keygen: CURVE keypairs for the bus (libs/bus/curve_keys.hpp,
// docs/explanation/security.md).
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <memory>
#include <vector>

#include "libs/bus/curve_keys.hpp"
#include "services/tunectl/commands.hpp"

namespace tunebus {

namespace {

// The role a key gets when --role is not given: the services' own names are services, worker*
// are workers, anything else is the least: viewer.
bus::Role DefaultRole(const std::string& name) {
  if (name == "scheduler" || name == "checkpoint-store" || name == "resource-manager")
    return bus::Role::kService;
  if (name.rfind("worker", 0) == 0) return bus::Role::kWorker;
  return bus::Role::kViewer;
}

// Writes one keypair (and its allow-list entry); prints what it wrote. 0 or 1.
int MakeKey(const std::string& dir, const std::string& name, bus::Role role, bool authorize,
            bool force) {
  auto paths = bus::WriteCurveKeyPair(dir, name, role, force);
  if (!paths.ok()) {
    std::cerr << "tunectl keygen: " << paths.status().message() << "\n";
    return 1;
  }
  auto key = bus::ReadCurveKeyFile(paths->secret_file);
  if (!key.ok()) {
    std::cerr << "tunectl keygen: " << key.status().message() << "\n";
    return 1;
  }
  std::cout << name << " (" << bus::RoleName(role) << "): " << paths->public_file << " (public "
            << key->public_key << "), " << paths->secret_file << " (secret, mode 0600)\n";
  if (authorize) {
    const std::string authorized = (std::filesystem::path(dir) / "authorized").string();
    if (Status s = bus::WritePublicKeyFile(authorized, *key, force); !s.ok()) {
      std::cerr << "tunectl keygen: " << s.message() << "\n";
      return 1;
    }
    std::cout << "  authorized: " << authorized << "/" << name << bus::kPublicKeySuffix << "\n";
  }
  return 0;
}

}  // namespace

int KeygenCommand(const GlobalFlags& g, const KeygenFlags& f) {
  std::string dir = f.dir.empty() ? g.keys_dir : f.dir;
  if (dir.empty()) dir = "tunebus-keys";
  if (f.suite) {
    // Every key a suite needs, each authorized: the services, one worker, one operator.
    const std::vector<std::pair<std::string, bus::Role>> keys = {
        {"scheduler", bus::Role::kService},
        {"checkpoint-store", bus::Role::kService},
        {"resource-manager", bus::Role::kService},
        {"worker", bus::Role::kWorker},
        {"tunectl", bus::Role::kOperator}};
    for (const auto& [name, role] : keys) {
      if (int code = MakeKey(dir, name, role, true, f.force); code != 0) return code;
    }
    std::cout << "Start every service with --keys-dir " << dir
              << " (each finds its own <name>.key_secret, the servers' <name>.key and the "
                 "allow-list "
              << dir << "/authorized); tunectl uses the key named tunectl.\n";
    return 0;
  }
  if (f.name.empty()) {
    std::cerr << "tunectl keygen: name the key (tunectl keygen NAME) or pass --suite\n";
    return 2;
  }
  bus::Role role = DefaultRole(f.name);
  if (!f.role.empty()) {
    auto parsed = bus::ParseRole(f.role);
    if (!parsed) {
      std::cerr << "tunectl keygen: --role " << f.role << " is not one of " << bus::RoleNames()
                << "\n";
      return 2;
    }
    role = *parsed;
  }
  if (int code = MakeKey(dir, f.name, role, f.authorize, f.force); code != 0) return code;
  if (!f.authorize) {
    std::cout << "To let it in, copy " << f.name << bus::kPublicKeySuffix
              << " into each server's allow-list folder (<keys-dir>/authorized) and send the "
                 "servers SIGHUP.\n";
  }
  return 0;
}

void AddKeygenCommand(CLI::App& app, Commands& commands) {
  auto flags = std::make_shared<KeygenFlags>();
  auto* cmd = app.add_subcommand(
      "keygen", "write a CURVE keypair: <dir>/NAME.key (public) and NAME.key_secret (0600)");
  cmd->add_option("name", flags->name, "key name (a file name): alice, worker-a, ...");
  cmd->add_option("--role", flags->role,
                  "viewer, operator, worker, service or searcher (default: service for "
                  "scheduler, checkpoint-store, resource-manager; worker for worker*; "
                  "else viewer)");
  cmd->add_option("--dir", flags->dir, "key folder (default: --keys-dir, else ./tunebus-keys)");
  cmd->add_flag("--authorize", flags->authorize,
                "also put the public key in <dir>/authorized, the allow-list");
  cmd->add_flag("--suite", flags->suite,
                "the keys of a whole suite (scheduler, checkpoint-store, resource-manager, "
                "worker, tunectl), all authorized");
  cmd->add_flag("--force", flags->force, "replace existing key files");
  commands.push_back({cmd, CommandNeeds::kNothing,
                      [flags](const GlobalFlags& g) { return KeygenCommand(g, *flags); }});
}

}  // namespace tunebus
