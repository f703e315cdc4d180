// Scheduler resume (DESIGN.md "Journal and recovery"): at start, read the experiments' journals
// from the checkpoint-store, replay the newest unfinished one into a TrialRunner, reattach the
// trials workers still run, requeue the others, and give back allocations nobody owns.
#include <chrono>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "libs/journal/records.hpp"
#include "libs/journal/replay.hpp"
#include "proto/resources.hpp"
#include "proto/store.hpp"
#include "services/scheduler/experiment.hpp"

namespace tunebus {

using nlohmann::json;

namespace {

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// One request over a dedicated DEALER, before the event loop runs: resent every second until
// `deadline` (the store may still be starting). Errors: Unavailable at the deadline, or the
// store's error reply.
template <typename Reply, typename Request>
Result<Reply> BlockingCall(zmq::socket_t& socket, Request request, bus::Clock::time_point deadline) {
  static uint64_t next_id = 1;
  request.id = next_id++;
  const std::string payload = proto::Encode(request);
  while (bus::Clock::now() < deadline) {
    bus::Send(socket, payload);
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    const auto until = std::min(deadline, bus::Clock::now() + std::chrono::seconds(1));
    while (bus::Clock::now() < until) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - bus::Clock::now());
      if (zmq::poll(&item, 1, std::max<std::chrono::milliseconds>(left, std::chrono::milliseconds(1))) == 0) continue;
      bus::Incoming in;
      if (!bus::Receive(socket, in)) continue;
      auto d = proto::Decode(in.payload.data(), in.payload.size());
      if (!d.ok() || d->id() != request.id) continue;  // a late answer to an earlier try
      if (d->type() == proto::ErrorReply::kType) {
        auto err = d->As<proto::ErrorReply>();
        return Status(bus::StatusCodeFromName(err.ok() ? err->code : "internal"), err.ok() ? err->message : "error");
      }
      return d->As<Reply>();
    }
  }
  return Status::Unavailable(fmt::format("the checkpoint-store did not answer {}", Request::kType));
}

}  // namespace

Status Scheduler::ResumeFromJournals() {
  if (!options_.resume) return Status::Ok();
  auto socket = bus::Connect(ctx_, zmq::socket_type::dealer, options_.store_endpoint);
  if (!socket.ok()) return socket.status();
  const auto deadline = bus::Clock::now() + std::chrono::milliseconds(options_.resume_timeout_ms);
  auto list = BlockingCall<proto::JournalListReply>(*socket, proto::JournalList{}, deadline);
  if (!list.ok()) return list.status();
  // The newest unfinished experiment (by submission time) is resumed.
  std::string best_name;
  double best_at = -1;
  std::vector<json> best_records;
  for (size_t i = 0; i < list->experiments.size() && i < list->last_seqs.size(); ++i) {
    const std::string& name = list->experiments[i];
    const uint64_t last = list->last_seqs[i];
    if (last == 0) continue;
    proto::JournalRead tail;
    tail.experiment = name;
    tail.from_seq = last;
    tail.max_records = 1;
    auto end = BlockingCall<proto::JournalReadReply>(*socket, tail, deadline);
    if (!end.ok()) return end.status();
    if (!end->records.empty()) {
      auto r = journal::DecodeRecord(end->records.back());
      if (r.ok() && r->value("kind", "") == "experiment_ended") continue;
    }
    std::vector<json> records;
    records.reserve(last);
    for (uint64_t from = 1; from <= last;) {
      proto::JournalRead read;
      read.experiment = name;
      read.from_seq = from;
      read.max_records = 10000;
      auto got = BlockingCall<proto::JournalReadReply>(*socket, read, deadline);
      if (!got.ok()) return got.status();
      if (got->records.empty()) break;
      for (const std::string& bytes : got->records) {
        auto r = journal::DecodeRecord(bytes);
        if (!r.ok()) {  // a torn record ends the usable journal; nothing after it is applied
          spdlog::error("Journal {} record {} does not decode ({}); replaying the {} before it", name,
                        from + (&bytes - got->records.data()), r.status().message(), records.size());
          from = last + 1;
          break;
        }
        records.push_back(std::move(*r));
      }
      if (from <= last) from = got->first_seq + got->records.size();
    }
    const double at = records.empty() ? 0 : records.front().value("submitted_at", 0.0);
    if (at > best_at) {
      best_at = at;
      best_name = name;
      best_records = std::move(records);
    }
  }
  if (best_name.empty()) return Status::Ok();
  return ResumeExperiment(best_name, std::move(best_records));
}

Status Scheduler::ResumeExperiment(const std::string& journal_name, std::vector<json> records) {
  const auto t0 = bus::Clock::now();
  journal::JournalReplayer replayer;
  for (const json& r : records) {
    if (Status s = replayer.Apply(r); !s.ok()) {
      spdlog::error("Journal {}: {}; replaying what came before", journal_name, s.message());
      break;
    }
  }
  journal::ReplayedExperiment replayed = replayer.Take();
  auto spec = ParseExperimentYaml(replayed.spec_yaml, replayed.base_dir, replayed.source_name);
  if (!spec.ok()) return spec.status();
  auto built = BuildExperiment(std::move(*spec), replayed.experiment_id, replayed.seed, replayed.restore_from);
  if (!built.ok()) return built.status();
  Experiment* e = *built;
  if (e->journal_name != journal_name) {
    return Status::Corruption(fmt::format("journal {} holds experiment {}", journal_name, e->journal_name));
  }
  for (const Trial& t : replayed.trials) {
    if (t.status == TrialStatus::kRunning) e->awaiting_reattach.insert(t.trial_id);
  }
  const size_t trials = replayed.trials.size();
  if (Status s = e->runner->Restore(std::move(replayed.trials), replayed.searcher_state, replayed.last_action,
                                    replayed.submitted_at_s);
      !s.ok()) {
    return s;
  }
  e->journal->Append(journal::ExperimentResumed(WallSeconds(), ""));
  state_ = State::kRunning;
  spdlog::info("Resumed experiment {} from journal {}: {} records, {} trials, {} running to reattach ({:.3f} s)",
               e->spec.name, journal_name, replayed.records, trials, e->awaiting_reattach.size(),
               std::chrono::duration<double>(bus::Clock::now() - t0).count());
  ReconcileAllocations(*e);
  loop_.AddTimer(bus::Duration{options_.reattach_grace_ms}, [this, e] { RequeueUnattached(*e); });
  return Status::Ok();
}

// Allocations of this experiment's trials that no RUNNING attempt owns (the scheduler died
// between a grant and its journal record, or while a trial left RUNNING) are given back.
void Scheduler::ReconcileAllocations(Experiment& e) {
  rm_->Request(proto::GetClusterView{}, [this, &e](Result<proto::Decoded> reply) {
    auto view = reply.ok() ? reply->As<proto::ClusterView>() : Result<proto::ClusterView>(reply.status());
    if (!view.ok()) {
      spdlog::warn("Cannot reconcile allocations: {}", view.status().ToString());
      return;
    }
    const std::string prefix = e.experiment_id + "_";
    for (const proto::NodeView& node : view->nodes) {
      for (const std::string& held : node.trials) {
        const auto slash = held.rfind('/');
        if (held.rfind(prefix, 0) != 0 || slash == std::string::npos) continue;
        const std::string trial_id = held.substr(0, slash);
        const int64_t attempt = std::strtoll(held.c_str() + slash + 1, nullptr, 10);
        const Trial* t = e.runner->FindTrial(trial_id);
        const bool owned = t && t->status == TrialStatus::kRunning && t->attempt == attempt && t->worker_id == node.worker_id;
        if (owned) continue;
        spdlog::info("Releasing {} on {}: no running attempt owns it after the restart", held, node.worker_id);
        proto::Release release;
        release.trial_id = trial_id;
        release.attempt = attempt;
        rm_->Request(release, [](Result<proto::Decoded>) {});
      }
    }
  });
}

void Scheduler::RequeueUnattached(Experiment& e) {
  for (const std::string& trial_id : e.awaiting_reattach) {
    const Trial* t = e.runner->FindTrial(trial_id);
    if (t == nullptr || t->status != TrialStatus::kRunning) continue;
    spdlog::warn("Trial {} was running on {} but no worker reported it after the restart; requeueing it", trial_id,
                 t->worker_id);
    e.runner->RequeueLost(trial_id, fmt::format("not reported by worker {} after the scheduler restarted",
                                                t->worker_id));
  }
  e.awaiting_reattach.clear();
}

}  // namespace tunebus
