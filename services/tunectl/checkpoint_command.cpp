// `tunectl checkpoint export`: a trial's stored checkpoint written into a folder, so the model
// can be used outside tunebus. The chunks come through the scheduler's control socket
// (fetch_checkpoint, PROTOCOL.md §2) and are unpacked by the system `tar` into a hidden sibling
// of the target folder, which is renamed into place only once every byte arrived: a failure
// leaves nothing behind.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libs/bus/control_client.hpp"
#include "libs/workdir/tar_process.hpp"
#include "proto/control.hpp"
#include "services/tunectl/commands.hpp"
#include "services/tunectl/control_call.hpp"

namespace tunebus {

namespace fs = std::filesystem;

namespace {

// 0 if `dir` is absent or an empty folder, else 2 after printing why.
int CheckTarget(const fs::path& dir) {
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (!fs::exists(st)) return 0;
  if (!fs::is_directory(st)) {
    std::cerr << "tunectl: " << dir.string()
              << " exists and is not a folder; name a new or empty folder with --to\n";
    return 2;
  }
  if (!fs::is_empty(dir, ec) || ec) {
    std::cerr
        << "tunectl: " << dir.string()
        << " exists and is not empty; name a new or empty folder with --to (nothing was written)\n";
    return 2;
  }
  return 0;
}

// "/a/b/" and "b/." -> an absolute path that names the folder itself.
fs::path Normalized(const fs::path& p) {
  fs::path abs = fs::absolute(p).lexically_normal();
  if (abs.filename().empty()) abs = abs.parent_path();
  return abs;
}

// Files under `dir` (relative paths, sorted) and their total size in bytes.
std::pair<std::vector<std::string>, int64_t> FilesUnder(const fs::path& dir) {
  std::vector<std::string> files;
  int64_t bytes = 0;
  std::error_code ec;
  for (const auto& f : fs::recursive_directory_iterator(dir, ec)) {
    if (!f.is_regular_file(ec)) continue;
    files.push_back(fs::relative(f.path(), dir, ec).string());
    bytes += int64_t(f.file_size(ec));
  }
  std::sort(files.begin(), files.end());
  return {files, bytes};
}

// Unpacks the checkpoint whose first chunk is `first` into the new folder `partial`, fetching
// the other chunks. Errors: the server's, or IoError from the folder or tar.
Status Unpack(ControlClient& client, proto::FetchCheckpoint req,
              const proto::CheckpointChunk& first, const fs::path& partial) {
  std::error_code ec;
  if (!fs::create_directory(partial, ec) || ec) {
    return Status::IoError(fmt::format("cannot write into {}: {}", partial.parent_path().string(),
                                       ec ? ec.message() : "it exists"));
  }
  auto tar = SpawnTar({"-C", partial.string(), "-xf", "-"}, /*child_writes=*/false);
  if (!tar.ok()) return tar.status();
  const auto [pid, fd] = *tar;
  Status s = WriteAll(fd, first.data.data(), first.data.size());
  req.checkpoint_id =
      first.checkpoint_id;  // the same one throughout, even if a newer one is stored meanwhile
  for (uint32_t chunk = 1; s.ok() && chunk < first.num_chunks; ++chunk) {
    req.chunk_index = chunk;
    auto next = client.CallFor<proto::CheckpointChunk>(req);
    s = next.ok() ? WriteAll(fd, next->data.data(), next->data.size()) : next.status();
  }
  ::close(fd);
  if (!s.ok()) ::kill(pid, SIGKILL);
  Status reaped = ReapTar(pid);
  return s.ok() ? reaped : s;
}

}  // namespace

int CheckpointExportCommand(const GlobalFlags& g, const CheckpointExportFlags& f) {
  std::signal(SIGPIPE, SIG_IGN);  // a tar that dies fails our write instead of killing tunectl
  if (!f.to.empty()) {
    if (int code = CheckTarget(Normalized(f.to)); code != 0) return code;
  }
  zmq::context_t ctx;
  auto client =
      ControlClient::Connect(ctx, g.connect, *g.security, std::chrono::milliseconds(g.timeout_ms));
  if (!client.ok()) return Fail(client.status());
  auto req = ExperimentRequest<proto::FetchCheckpoint>(g);
  req.trial_id = f.trial_id;
  req.checkpoint_id = f.checkpoint_id;
  auto first = client->CallFor<proto::CheckpointChunk>(req);
  if (!first.ok()) return Fail(first.status());
  const std::string id = first->checkpoint_id;
  const fs::path dest = Normalized(
      f.to.empty() ? fmt::format("{}_checkpoint_{}", first->trial_id, id.substr(id.rfind('/') + 1))
                   : f.to);
  if (f.to.empty()) {
    if (int code = CheckTarget(dest); code != 0) return code;
  }
  std::error_code ec;
  fs::create_directories(dest.parent_path(), ec);
  if (ec)
    return Fail(Status::IoError(
        fmt::format("cannot create {}: {}", dest.parent_path().string(), ec.message())));
  const fs::path partial =
      dest.parent_path() / fmt::format(".{}.partial-{}", dest.filename().string(), ::getpid());
  Status s = Unpack(*client, req, *first, partial);
  if (s.ok()) {
    fs::rename(partial, dest, ec);  // replaces an empty folder
    if (ec)
      s = Status::IoError(
          fmt::format("cannot move the checkpoint into {}: {}", dest.string(), ec.message()));
  }
  if (!s.ok()) {
    fs::remove_all(partial, ec);
    return Fail(s);
  }
  const auto [files, bytes] = FilesUnder(dest);
  const nlohmann::json body = {{"experiment", first->experiment},
                               {"trial_id", first->trial_id},
                               {"checkpoint_id", id},
                               {"training_iteration", first->training_iteration},
                               {"dir", dest.string()},
                               {"files", files},
                               {"bytes", bytes}};
  return PrintBody(g, body, [&](const nlohmann::json&) {
    std::cout << fmt::format(
        "Checkpoint {} of trial {} (iteration {}) written to {}: {} files, {} bytes\n", id,
        first->trial_id, first->training_iteration, dest.string(), files.size(), bytes);
    for (const std::string& file : files) std::cout << "  " << file << "\n";
    std::cout << std::flush;
  });
}

void AddCheckpointCommands(CLI::App& app, GlobalFlags& g, Commands& commands) {
  auto flags = std::make_shared<CheckpointExportFlags>();
  auto* checkpoint_cmd = app.add_subcommand("checkpoint", "stored checkpoints");
  checkpoint_cmd->require_subcommand(1);
  auto* export_cmd = checkpoint_cmd->add_subcommand(
      "export", "write a trial's checkpoint (the files its trainable saved) into a folder");
  export_cmd->add_option("trial_id", flags->trial_id)->required();
  export_cmd->add_option("--checkpoint", flags->checkpoint_id,
                         "checkpoint id (or its last part, e.g. 00000020-a1); default: the newest");
  export_cmd->add_option(
      "--to", flags->to,
      "a new or empty folder; default ./<trial_id>_checkpoint_<iteration>-a<attempt>");
  AddReadExperimentFlag(*export_cmd, g);
  commands.push_back({export_cmd, CommandNeeds::kServer, [flags](const GlobalFlags& g) {
                        return CheckpointExportCommand(g, *flags);
                      }});
}

}  // namespace tunebus
