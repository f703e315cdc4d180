// ControlService's handlers of whole experiments: submit (HandleSubmit, with a shipped
// working_dir or restore_from after the store answered), `tunectl resume` (of one in memory, or
// one the journals hold: resumed, or answered from a read-only load when finished for good),
// `lsx` (rows of the experiments in memory and of every other journal), and `tunectl delete
// NAME [--keep-results]`: a finished experiment's journal and checkpoints leave the
// checkpoint-store (proto::ExperimentDelete: one synced write, then a compaction that takes the
// space off the disk) and its results folder is removed; an unfinished one is refused.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "libs/core/sha256.hpp"
#include "libs/journal/records.hpp"
#include "proto/control.hpp"
#include "proto/store.hpp"
#include "services/scheduler/control/control_service.hpp"
#include "services/scheduler/control/trial_json.hpp"
#include "services/scheduler/core/experiment.hpp"
#include "services/scheduler/core/experiment_registry.hpp"
#include "services/scheduler/core/fair_share_arbiter.hpp"

namespace tunebus {

namespace fs = std::filesystem;
using nlohmann::json;

Status ControlService::HandleSubmit(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::SubmitExperiment>();
  if (!msg.ok()) return msg.status();
  for (Experiment* running : experiments_.Unfinished()) {
    if (running->phase() != Experiment::Phase::kRunning ||
        running->spec().source_yaml != msg->spec_yaml) {
      continue;
    }
    // The same experiment is already running (e.g. resumed after a restart): follow it.
    ReplyRead(in, d.id(),
              ExperimentToJson(running->name(), running->runner(), running->experiment_dir(),
                               running->ElapsedS()));
    return Status::Ok();
  }
  if (Status s = JournalWritable(nullptr); !s.ok()) return s;
  auto spec = ParseExperimentYaml(msg->spec_yaml, msg->base_dir, msg->source_name);
  if (!spec.ok()) return spec.status();
  if (Status s = experiments_.NameFree(spec->name); !s.ok()) return s;
  if (msg->working_dir_digest.empty()) {
    SubmitParsed(in, d.id(), *msg, std::move(*spec));
    return Status::Ok();
  }
  // A shipped working_dir: the store must hold its archive before anything is journaled.
  if (!IsSha256Hex(msg->working_dir_digest)) {
    return Status::InvalidArgument(
        fmt::format("working_dir_digest '{}' is not a SHA-256 (64 lowercase hex digits)",
                    msg->working_dir_digest.substr(0, 80)));
  }
  experiments_.Claim(spec->name);
  StatWorkingDir(msg->working_dir_digest, [this, route = in.route, id = d.id(), type = d.type(),
                                           msg = *msg, spec = std::move(*spec)](
                                              Result<std::optional<int64_t>> size) mutable {
    experiments_.Release(spec.name);
    bus::Incoming back;
    back.route = route;
    if (!size.ok()) return ReplyError(back, id, type, size.status());
    if (!size->has_value()) {
      return ReplyError(
          back, id, type,
          Status::NotFound(fmt::format("working_dir {} is not in the checkpoint-store; upload it "
                                       "with working_dir_put before submitting",
                                       msg.working_dir_digest.substr(0, 12))));
    }
    SubmitParsed(back, id, msg, std::move(spec));
  });
  return Status::Ok();
}

void ControlService::SubmitParsed(const bus::Incoming& in, uint64_t id,
                                  const proto::SubmitExperiment& msg, ExperimentSpec spec) {
  if (spec.restore_from.empty()) return StartExperiment(in, id, msg, std::move(spec), std::nullopt);
  // restore_from: learn the checkpoint's training_iteration from the store first.
  proto::CheckpointList list;
  list.prefix = spec.restore_from;
  experiments_.Claim(spec.name);
  parts_.store.Request(list, [this, route = in.route, id, type = std::string(msg.kType), msg,
                              spec = std::move(spec)](Result<proto::Decoded> reply) mutable {
    experiments_.Release(spec.name);
    bus::Incoming back;
    back.route = route;
    auto listed = reply.ok() ? reply->As<proto::CheckpointListReply>()
                             : Result<proto::CheckpointListReply>(reply.status());
    if (!listed.ok()) return ReplyError(back, id, type, listed.status());
    for (const proto::CheckpointInfo& info : listed->checkpoints) {
      if (info.checkpoint_id != spec.restore_from) continue;
      json meta = json::parse(info.metadata_json, nullptr, /*allow_exceptions=*/false);
      CheckpointRef ref;
      ref.checkpoint_id = info.checkpoint_id;
      ref.size_bytes = int64_t(info.size_bytes);
      if (meta.is_object()) {
        ref.training_iteration = meta.value("training_iteration", int64_t(0));
        ref.time_total_s = meta.value("time_total_s", 0.0);
      }
      return StartExperiment(back, id, msg, std::move(spec), ref);
    }
    ReplyError(back, id, type,
               Status::NotFound("restore_from: no checkpoint '" + spec.restore_from +
                                "' in the checkpoint-store"));
  });
}

void ControlService::StartExperiment(const bus::Incoming& in, uint64_t id,
                                     const proto::SubmitExperiment& msg, ExperimentSpec spec,
                                     std::optional<CheckpointRef> restore_from) {
  auto e =
      experiments_.Submit(parts_.experiment_context, msg, std::move(spec), std::move(restore_from));
  if (!e.ok()) return ReplyError(in, id, proto::SubmitExperiment::kType, e.status());
  ReplyJson(*e, in, id, ExperimentToJson((*e)->name(), (*e)->runner(), (*e)->experiment_dir(), 0));
}

Status ControlService::HandleResumeExperiment(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::ResumeExperimentCommand>();
  if (!msg.ok()) return msg.status();
  const auto mode = ParseRerunMode(msg->rerun_errored);
  if (!mode.ok()) {
    return Status::InvalidArgument("--rerun-errored must be restore or restart, got '" +
                                   msg->rerun_errored + "'");
  }
  Experiment* e = nullptr;
  for (const auto& x : experiments_.experiments()) {
    if (x->name() == msg->name) e = x.get();
  }
  if (experiments_.Claimed(msg->name)) {
    return Status::FailedPrecondition(
        fmt::format("experiment {} is being submitted or resumed; try again", msg->name));
  }
  if (e != nullptr && e->phase() == Experiment::Phase::kResuming) {
    return Status::FailedPrecondition(fmt::format(
        "experiment {} is being resumed (its journal is being read); try again", e->name()));
  }
  if (e != nullptr) {
    if (Status s = JournalWritable(e); !s.ok()) return s;
    ContinueResume(in, d.id(), e, *mode);
    return Status::Ok();
  }
  // Not in this process: the newest journal with that name. Its name is claimed meanwhile.
  experiments_.Claim(msg->name);
  const std::function<void(const Status&)> fail = [this, route = in.route, id = d.id(),
                                                   name = msg->name](const Status& s) {
    experiments_.Release(name);
    ReplyError(ReplyTo(route), id, proto::ResumeExperimentCommand::kType, s);
  };
  const std::function<void(const JournalSummary&)> resume = [this, route = in.route, id = d.id(),
                                                             mode = *mode, name = msg->name,
                                                             fail](const JournalSummary& j) {
    experiments_.journals().ReplayToResume(
        j.journal, j.last_seq,
        [this, route, id, mode, name, fail,
         journal = j.journal](Result<JournalReader::Resumable>&& r) {
          if (!r.ok()) return fail(r.status());
          experiments_.Release(name);  // Resume checks the name itself
          experiments_.Resume(parts_.experiment_context, journal, std::move(r->replayed),
                              r->last_seq,
                              [this, route, id, mode, fail](Result<Experiment*> resumed) {
                                if (!resumed.ok()) return fail(resumed.status());
                                ContinueResume(ReplyTo(route), id, *resumed, mode);
                              });
        });
  };
  experiments_.journals().List([this, name = msg->name, mode = *mode, fail,
                                resume](Result<std::vector<JournalSummary>> journals) {
    if (!journals.ok()) return fail(journals.status());
    const JournalSummary* newest = nullptr;
    for (const JournalSummary& j : *journals) {
      if (ExperimentNameOfJournal(j.journal) != name) continue;
      if (newest == nullptr || j.submitted_at_s > newest->submitted_at_s) newest = &j;
    }
    if (newest == nullptr) return fail(Status::NotFound("no experiment named " + name));
    if (!newest->ended || mode != RerunMode::kNone) return resume(*newest);
    // Finished for good (not INTERRUPTED): answered from a read-only load, its files untouched.
    experiments_.LoadJournaled(*newest, [fail, resume, j = *newest](Result<Experiment*> loaded) {
      if (!loaded.ok()) return fail(loaded.status());
      if ((*loaded)->runner().status() != ExperimentStatus::kInterrupted)
        return fail((*loaded)->FinishedError());
      resume(j);
    });
  });
  return Status::Ok();
}

void ControlService::ContinueResume(const bus::Incoming& in, uint64_t id, Experiment* e,
                                    RerunMode mode) {
  const std::string type = proto::ResumeExperimentCommand::kType;
  e->recorder().CompleteEnd(true);  // its experiment_ended record comes before what follows
  if (TrialControl(e->runner()).Reopen()) {
    e->journal().Append(journal::ExperimentResumed(parts_.clock.WallSeconds(), RerunMode::kNone));
    spdlog::info("Experiment {} continues after its interruption", e->name());
  }
  int64_t rerun = 0;
  if (mode != RerunMode::kNone) {
    auto n = TrialControl(e->runner()).RerunErrored(mode);
    if (!n.ok()) return ReplyError(in, id, type, n.status());
    rerun = *n;
    if (rerun > 0)
      e->journal().Append(journal::ExperimentResumed(parts_.clock.WallSeconds(), mode));
  }
  if (e->runner().IsFinished()) return ReplyError(in, id, type, e->FinishedError());
  if (e->phase() == Experiment::Phase::kEnded) e->MarkRunning();
  spdlog::info("Experiment {} resumed by tunectl (rerun_errored='{}': {} trials)", e->name(),
               RerunModeName(mode), rerun);
  e->runner().Step();
  json body = ExperimentToJson(e->name(), e->runner(), e->experiment_dir(), 0);
  body["rerun"] = rerun;
  ReplyJson(e, in, id, body);
}

Status ControlService::HandleListExperiments(bus::Incoming& in, const proto::Decoded& d) {
  // The experiments in memory answer from memory; the others' journals do not change while
  // this scheduler runs, so a recent journal list names them, and their rows are cached by
  // length: an lsx is answered in this call, without waiting for the store.
  if (auto recent = experiments_.journals().RecentLengths()) {
    ListExperiments(in.route, d.id(), d.type(), std::move(*recent));
    return Status::Ok();
  }
  experiments_.journals().ListLengths([this, route = in.route, id = d.id(), type = d.type()](
                                          Result<std::vector<JournalLength>> lengths) {
    if (!lengths.ok()) return ReplyError(ReplyTo(route), id, type, lengths.status());
    ListExperiments(route, id, type, std::move(*lengths));
  });
  return Status::Ok();
}

void ControlService::ListExperiments(const std::vector<std::string>& route, uint64_t id,
                                     const std::string& type, std::vector<JournalLength> lengths) {
  experiments_.ListRows(
      std::move(lengths), [this](const Experiment& e) { return parts_.arbiter.ShareJson(e); },
      [this, route, id, type](Result<json> rows) {
        if (!rows.ok()) return ReplyError(ReplyTo(route), id, type, rows.status());
        ReplyRead(ReplyTo(route), id, *rows);
      });
}

Status ControlService::HandleDeleteExperiment(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::DeleteExperiment>();
  if (!msg.ok()) return msg.status();
  const std::string& name = msg->experiment;
  if (name.empty()) return Status::InvalidArgument("name the experiment to delete");
  if (experiments_.Claimed(name)) {
    return Status::FailedPrecondition(
        fmt::format("experiment {} is being submitted or resumed", name));
  }
  for (const Experiment* e : experiments_.Unfinished()) {
    if (e->name() == name || e->journal_name() == name) {
      return Status::FailedPrecondition(
          fmt::format("experiment {} is not finished (journal {}); stop it first: tunectl "
                      "stop-experiment -e {}",
                      e->name(), e->journal_name(), e->journal_name()));
    }
  }
  experiments_.FindExperiment(name, [this, route = in.route, id = d.id(), type = d.type(),
                                     keep = msg->keep_results](Result<Experiment*> found) {
    if (!found.ok()) return ReplyError(ReplyTo(route), id, type, found.status());
    Experiment* e = *found;
    if (e->read_only()) return DeleteFinished(route, id, *e, e->journal_name(), keep);
    if (e->phase() != Experiment::Phase::kEnded) {
      return ReplyError(ReplyTo(route), id, type,
                        Status::FailedPrecondition(fmt::format(
                            "experiment {} is not finished; stop it first", e->journal_name())));
    }
    // Its experiment_ended record (and any late one) reaches the store before the delete: a
    // live experiment stays allocated (retired_), so `e` outlives the wait.
    e->recorder().CompleteEnd(true);
    e->journal().AfterDurable(
        [this, route, id, e, keep] { DeleteFinished(route, id, *e, e->journal_name(), keep); });
  });
  return Status::Ok();
}

void ControlService::DeleteFinished(const std::vector<std::string>& route, uint64_t id,
                                    const Experiment& e, const std::string& journal,
                                    bool keep_results) {
  proto::ExperimentDelete request;
  request.experiment = journal;
  // Values only: `e` may leave the read-only cache before the store answers.
  parts_.store.Request(request, [this, route, id, journal, name = e.name(),
                                 dir = e.experiment_dir(),
                                 keep_results](Result<proto::Decoded> reply) {
    const std::string type = proto::DeleteExperiment::kType;
    auto ack = reply.ok() ? reply->As<proto::ExperimentDeleteAck>()
                          : Result<proto::ExperimentDeleteAck>(reply.status());
    if (!ack.ok()) {
      return ReplyError(
          ReplyTo(route), id, type,
          Status(ack.status().code(), fmt::format("checkpoint-store: {}", ack.status().message())));
    }
    experiments_.Forget(journal);
    bool removed = false;
    std::error_code ec;
    if (!keep_results && fs::exists(dir, ec)) {
      fs::remove_all(dir, ec);
      removed = !ec;
      if (ec)
        spdlog::warn("Experiment {}: cannot remove its results {}: {}", journal, dir, ec.message());
    }
    spdlog::info(
        "Deleted experiment {}: {} journal records, {} checkpoints; the store's live data {} -> {} "
        "bytes; results {} {}",
        journal, ack->records, ack->checkpoints, ack->bytes_before, ack->bytes_after, dir,
        removed ? "removed" : "kept");
    ReplyRead(ReplyTo(route), id,
              {{"name", name},
               {"journal", journal},
               {"records", ack->records},
               {"checkpoints", ack->checkpoints},
               {"store_bytes_before", ack->bytes_before},
               {"store_bytes_after", ack->bytes_after},
               {"compaction_s", ack->compaction_s},
               {"results_dir", dir},
               {"results_removed", removed}});
  });
}

}  // namespace tunebus
