#include "services/scheduler/dashboard/routes/trial_routes.hpp"

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <fstream>
#include <memory>
#include <optional>

#include "proto/control.hpp"
#include "services/scheduler/dashboard/views/trial_views.hpp"

namespace tunebus::dashboard {

// Named (not anonymous): the unity build compiles this file with the other routes' files.
namespace trial_routes {

using nlohmann::json;

// result.json is read up to this size (a longer one shows its beginning).
constexpr int64_t kResultFileReadBytes = 64 << 20;
// error.txt's tail sent with the trial.
constexpr int64_t kErrorTailBytes = 64 << 10;

// A file's bytes from `offset`, at most `length`, and its size; nullopt when it cannot be
// opened (absent).
struct FileRange {
  int64_t size = 0;
  int64_t offset = 0;
  std::string bytes;
};

std::optional<FileRange> ReadRange(const std::string& path, int64_t offset, int64_t length) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return std::nullopt;
  FileRange r;
  r.size = int64_t(in.tellg());
  r.offset = std::min(offset, r.size);
  r.bytes.resize(size_t(std::min(length, r.size - r.offset)));
  in.seekg(r.offset);
  in.read(r.bytes.data(), std::streamsize(r.bytes.size()));
  r.bytes.resize(size_t(std::max<std::streamsize>(in.gcount(), 0)));
  return r;
}

// The last `tail_bytes` of a file, from its first whole line.
std::optional<FileRange> ReadTail(const std::string& path, int64_t tail_bytes) {
  std::ifstream probe(path, std::ios::binary | std::ios::ate);
  if (!probe) return std::nullopt;
  const TailWindow w = TailOf(int64_t(probe.tellg()), tail_bytes);
  auto r = ReadRange(path, w.offset, w.length);
  if (!r) return r;
  const std::string_view whole = WholeLines(r->bytes, r->offset);
  r->offset += int64_t(r->bytes.size() - whole.size());
  r->bytes.erase(0, r->bytes.size() - whole.size());
  return r;
}

std::string TrialDir(const json& trial) { return trial.value("dir", std::string()); }

// A checkpoint's download: its chunks fetched one by one as the page reads, each on the HTTP
// thread that sends it, with the same client and of the same checkpoint even if the trial saves a
// newer one meanwhile.
struct CheckpointDownload {
  std::optional<ControlClient> client;
  proto::FetchCheckpoint fetch;
  proto::CheckpointChunk chunk;  // the next to send
  bool answered = true;          // the client's last request was answered

  // Sends `chunk` and fetches the one after it; false (the connection is closed and the
  // download fails) when the page is gone or the fetch failed.
  bool SendNext(httplib::DataSink& sink) {
    if (!chunk.data.empty() && !sink.write(chunk.data.data(), chunk.data.size())) return false;
    const uint32_t next = chunk.chunk_index + 1;
    if (next >= chunk.num_chunks) {
      sink.done();
      return true;
    }
    fetch.chunk_index = next;
    auto got = client->CallFor<proto::CheckpointChunk>(fetch);
    if (!got.ok()) {
      answered = got.status().code() != StatusCode::kUnavailable;
      spdlog::warn("Dashboard: the export of checkpoint {} stopped at chunk {}: {}",
                   fetch.checkpoint_id, next, got.status().ToString());
      return false;
    }
    chunk = std::move(*got);
    return true;
  }
};

}  // namespace trial_routes

using nlohmann::json;

using trial_routes::TrialDir;

void TrialRoutes::AddTo(Router& router) {
  router.Page(R"(/experiments/([^/]+)/trials/([^/]+))", "trial.html");
  router.Get(R"(/api/experiments/([^/]+)/trials/([^/]+))",
             Router::Bind(this, &TrialRoutes::ServeTrial));
  router.Get(R"(/api/experiments/([^/]+)/trials/([^/]+)/results)",
             Router::Bind(this, &TrialRoutes::ServeResults));
  router.Get(R"(/api/experiments/([^/]+)/trials/([^/]+)/checkpoints)",
             Router::Bind(this, &TrialRoutes::ServeCheckpoints));
  router.Get(R"(/api/experiments/([^/]+)/trials/([^/]+)/logs)",
             Router::Bind(this, &TrialRoutes::ServeLogs));
  router.Get(R"(/api/experiments/([^/]+)/trials/([^/]+)/checkpoints/([^/]+)/export)",
             Router::Bind(this, &TrialRoutes::ServeCheckpointExport));
}

Result<json> TrialRoutes::TrialOf(const httplib::Request& req) {
  proto::ShowTrial show;
  show.experiment = req.matches[1].str();
  show.trial_id = req.matches[2].str();
  return control_.Call(show);
}

Result<std::pair<json, json>> TrialRoutes::TrialAndSummaryOf(const httplib::Request& req) {
  auto trial = TrialOf(req);
  if (!trial.ok()) return trial.status();
  proto::GetExperiment get;
  get.experiment = req.matches[1].str();
  auto summary = control_.Call(get);
  if (!summary.ok()) return summary.status();
  return std::make_pair(std::move(*trial), std::move(*summary));
}

void TrialRoutes::ServeTrial(const httplib::Request& req, httplib::Response& res) {
  auto shown = TrialAndSummaryOf(req);
  if (!shown.ok()) return SendError(res, shown.status());
  auto& [trial, summary] = *shown;
  const std::string name = req.matches[1].str();
  json body = {{"experiment", summary.value("name", name)},
               {"journal", summary.value("journal", name)},
               {"metric", summary.value("metric", std::string())},
               {"mode", summary.value("mode", std::string())},
               {"error_text", nullptr}};
  if (auto error =
          trial_routes::ReadTail(TrialDir(trial) + "/error.txt", trial_routes::kErrorTailBytes)) {
    body["error_text"] = std::move(error->bytes);
  }
  body["trial"] = std::move(trial);
  SendJson(res, body);
}

void TrialRoutes::ServeResults(const httplib::Request& req, httplib::Response& res) {
  using trial_routes::kResultFileReadBytes;
  ResultsQuery q;
  if (req.has_param("offset")) q.offset = IntParam(req, "offset", 0);
  q.limit = IntParam(req, "limit", q.limit);
  auto query = CheckResultsQuery(q);
  if (!query.ok()) return SendError(res, query.status());
  auto shown = TrialAndSummaryOf(req);
  if (!shown.ok()) return SendError(res, shown.status());
  const auto& [trial, summary] = *shown;
  auto file = trial_routes::ReadRange(TrialDir(trial) + "/result.json", 0, kResultFileReadBytes);
  json page = ResultPage(file ? file->bytes : std::string(), *query,
                         summary.value("metric", std::string()));
  page["trial_id"] = req.matches[2].str();
  page["truncated"] = file && file->size > kResultFileReadBytes;
  SendJson(res, page);
}

void TrialRoutes::ServeCheckpoints(const httplib::Request& req, httplib::Response& res) {
  auto trial = TrialOf(req);
  if (!trial.ok()) return SendError(res, trial.status());
  auto file = trial_routes::ReadRange(TrialDir(*trial) + "/result.json", 0,
                                      trial_routes::kResultFileReadBytes);
  json body = CheckpointRows(*trial, file ? file->bytes : std::string());
  body["trial_id"] = req.matches[2].str();
  SendJson(res, body);
}

void TrialRoutes::ServeLogs(const httplib::Request& req, httplib::Response& res) {
  auto name = LogFileName(req.get_param_value("stream"));
  if (!name.ok()) return SendError(res, name.status());
  auto tail_bytes = CheckTailBytes(IntParam(req, "tail_bytes", kDefaultTailBytes));
  if (!tail_bytes.ok()) return SendError(res, tail_bytes.status());
  auto trial = TrialOf(req);
  if (!trial.ok()) return SendError(res, trial.status());
  const std::string path = TrialDir(*trial) + "/" + *name;
  json body = {{"trial_id", req.matches[2].str()},
               {"stream", *name},
               {"path", path},
               {"exists", false},
               {"size", 0},
               {"offset", 0},
               {"text", ""}};
  if (auto tail = trial_routes::ReadTail(path, *tail_bytes)) {
    body["exists"] = true;
    body["size"] = tail->size;
    body["offset"] = tail->offset;
    body["text"] = std::move(tail->bytes);
  }
  SendJson(res, body);
}

void TrialRoutes::ServeCheckpointExport(const httplib::Request& req, httplib::Response& res) {
  proto::FetchCheckpoint fetch;
  fetch.experiment = req.matches[1].str();
  fetch.trial_id = req.matches[2].str();
  fetch.checkpoint_id = req.matches[3].str();
  auto client = control_.Take();
  if (!client.ok()) return SendError(res, client.status());
  auto first = client->CallFor<proto::CheckpointChunk>(fetch);
  if (!first.ok()) {
    const Status& why = first.status();
    if (why.code() != StatusCode::kUnavailable) control_.Return(std::move(*client));
    // A trial without a stored checkpoint has no such checkpoint either.
    return SendError(
        res, why.code() == StatusCode::kFailedPrecondition ? Status::NotFound(why.message()) : why);
  }
  auto d = std::make_shared<trial_routes::CheckpointDownload>();
  d->client.emplace(std::move(*client));
  d->fetch = fetch;
  d->fetch.checkpoint_id = first->checkpoint_id;
  d->chunk = std::move(*first);
  res.set_header("Content-Disposition",
                 fmt::format("attachment; filename=\"{}\"",
                             ExportFileName(d->chunk.trial_id, d->chunk.checkpoint_id)));
  res.set_header("X-Checkpoint-Id", d->chunk.checkpoint_id);
  res.set_header("Cache-Control", "no-store");
  res.set_chunked_content_provider(
      "application/x-tar", [d](size_t, httplib::DataSink& sink) { return d->SendNext(sink); },
      [this, d](bool) {
        if (d->answered) control_.Return(std::move(*d->client));
      });
}

}  // namespace tunebus::dashboard
