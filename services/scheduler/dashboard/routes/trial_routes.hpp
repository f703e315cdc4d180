// TrialRoutes: the dashboard's trial page and its JSON routes (docs/how-to/dashboard.md "One
// trial"), a handler each, registered by AddTo:
//
//   GET /experiments/NAME/trials/ID            the page (trial.html, trial.js)
//   GET /api/experiments/NAME/trials/ID        {experiment, journal, metric, mode, trial: the
//                                              trial object (ShowTrial), error_text: the tail of
//                                              its error.txt (the worker's error and the
//                                              trainable's stderr at each failure) or null}
//   GET .../trials/ID/results?offset=&limit=   ResultPage of its result.json (no offset: the
//                                              last `limit` rows)
//   GET .../trials/ID/checkpoints              CheckpointRows of the checkpoints it keeps
//   GET .../trials/ID/checkpoints/CID/export   the checkpoint as a tar archive (the folder the
//                                              trainable saved), streamed chunk by chunk as the
//                                              control socket's fetch_checkpoint answers
//                                              (`tunectl checkpoint export`'s bytes); 404 when
//                                              the trial or the store no longer keeps it
//   GET .../trials/ID/logs?stream=stdout|stderr&tail_bytes=N
//                                              {trial_id, stream, path, exists, size, offset,
//                                              text}: the last N bytes (default 64 KiB) of the
//                                              file the trial-worker appends the trainable's
//                                              output to, from the first whole line
//
// Everything runs on the HTTP threads: the trial object comes from the control socket (a read),
// the files from the trial's folder on this host (the scheduler writes result.json and
// error.txt there; the workers append stdout and stderr to the same folder, shared with remote
// workers as docs/how-to/deploy.md describes), the checkpoint's bytes from the checkpoint-store
// through fetch_checkpoint, which the scheduler's event loop forwards without waiting: it sends
// the store's answer on as it comes. The dashboard's viewer key may not read the store itself
// (its checkpoint calls are the workers' and services', docs/explanation/security.md).
// Thread-safety: handlers run on several HTTP threads at once; it keeps no state of its own.
#pragma once

#include <nlohmann/json.hpp>
#include <utility>

#include "libs/core/status.hpp"
#include "services/scheduler/dashboard/http.hpp"
#include "services/scheduler/dashboard/routes/control_pool.hpp"

namespace tunebus::dashboard {

class TrialRoutes {
 public:
  /// REQUIRES: `control` outlives this.
  explicit TrialRoutes(ControlPool& control) : control_(control) {}
  void AddTo(Router& router);

 private:
  void ServeTrial(const httplib::Request& req, httplib::Response& res);
  void ServeResults(const httplib::Request& req, httplib::Response& res);
  void ServeCheckpoints(const httplib::Request& req, httplib::Response& res);
  void ServeLogs(const httplib::Request& req, httplib::Response& res);
  void ServeCheckpointExport(const httplib::Request& req, httplib::Response& res);
  /// The trial object of the route's NAME and ID (req.matches[1], [2]; ShowTrial).
  Result<nlohmann::json> TrialOf(const httplib::Request& req);
  /// The same with its experiment's summary (GetExperiment), or the first of the two errors.
  Result<std::pair<nlohmann::json, nlohmann::json>> TrialAndSummaryOf(const httplib::Request& req);

  ControlPool& control_;
};

}  // namespace tunebus::dashboard
