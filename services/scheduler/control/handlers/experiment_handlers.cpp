// ExperimentHandlers: submit, resume, lsx, delete, stop, get and set-weight of experiments
// (experiment_handlers.hpp).
#include "services/scheduler/control/handlers/experiment_handlers.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "libs/core/sha256.hpp"
#include "libs/core/version.hpp"
#include "libs/journal/records.hpp"
#include "libs/tune/make_searcher.hpp"
#include "libs/tune/warm_start_source.hpp"
#include "proto/control.hpp"
#include "proto/store.hpp"
#include "services/scheduler/control/handlers/working_dir_handlers.hpp"
#include "services/scheduler/control/trial_json.hpp"
#include "services/scheduler/core/experiment.hpp"
#include "services/scheduler/core/experiment_registry.hpp"
#include "services/scheduler/core/fair_share_arbiter.hpp"

namespace tunebus {

namespace fs = std::filesystem;
using nlohmann::json;

Status ExperimentHandlers::HandleSubmit(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::SubmitExperiment>();
  if (!msg.ok()) return msg.status();
  for (Experiment* running : control_.experiments().Unfinished()) {
    if (running->phase() != Experiment::Phase::kRunning ||
        running->spec().source_yaml != msg->spec_yaml) {
      continue;
    }
    // The same experiment is already running (e.g. resumed after a restart): follow it.
    control_.ReplyRead(
        in, d.id(),
        ExperimentToJson(running->name(), running->runner(), running->experiment_dir(),
                         running->ElapsedS(), running->driver()));
    return Status::Ok();
  }
  if (Status s = control_.JournalWritable(nullptr); !s.ok()) return s;
  auto spec = ParseExperimentYaml(msg->spec_yaml, msg->base_dir, msg->source_name);
  if (!spec.ok()) return spec.status();
  if (Status s = control_.experiments().NameFree(spec->name); !s.ok()) return s;
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
  control_.experiments().Claim(spec->name);
  StatWorkingDir(control_.parts().store, msg->working_dir_digest,
                 [this, route = in.route, id = d.id(), type = d.type(), msg = *msg,
                  spec = std::move(*spec)](Result<std::optional<int64_t>> size) mutable {
                   control_.experiments().Release(spec.name);
                   bus::Incoming back;
                   back.route = route;
                   if (!size.ok()) return control_.ReplyError(back, id, type, size.status());
                   if (!size->has_value()) {
                     return control_.ReplyError(
                         back, id, type,
                         Status::NotFound(
                             fmt::format("working_dir {} is not in the checkpoint-store; upload it "
                                         "with working_dir_put before submitting",
                                         msg.working_dir_digest.substr(0, 12))));
                   }
                   SubmitParsed(back, id, msg, std::move(spec));
                 });
  return Status::Ok();
}

void ExperimentHandlers::SubmitParsed(const bus::Incoming& in, uint64_t id,
                                      const proto::SubmitExperiment& msg, ExperimentSpec spec) {
  if (spec.restore_from.empty()) return StartExperiment(in, id, msg, std::move(spec), std::nullopt);
  // restore_from: learn the checkpoint's training_iteration from the store first.
  proto::CheckpointList list;
  list.prefix = spec.restore_from;
  control_.experiments().Claim(spec.name);
  control_.parts().store.Request(
      list, [this, route = in.route, id, type = std::string(msg.kType), msg,
             spec = std::move(spec)](Result<proto::Decoded> reply) mutable {
        control_.experiments().Release(spec.name);
        bus::Incoming back;
        back.route = route;
        auto listed = reply.ok() ? reply->As<proto::CheckpointListReply>()
                                 : Result<proto::CheckpointListReply>(reply.status());
        if (!listed.ok()) return control_.ReplyError(back, id, type, listed.status());
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
        control_.ReplyError(back, id, type,
                            Status::NotFound("restore_from: no checkpoint '" + spec.restore_from +
                                             "' in the checkpoint-store"));
      });
}

void ExperimentHandlers::ReadWarmStart(const ExperimentSpec& spec, std::vector<std::string> names,
                                       size_t i, json sources,
                                       std::function<void(Result<json>)> done) {
  if (i == names.size()) return done(std::move(sources));
  const std::string name = names[i];
  const WarmStartTarget target{spec.param_space, spec.metric};
  control_.experiments().FindExperiment(name, [this, &spec, names = std::move(names), i,
                                               sources = std::move(sources), done = std::move(done),
                                               target](Result<Experiment*> found) mutable {
    if (!found.ok()) {
      return done(Status(found.status().code(),
                         fmt::format("search.warm_start[{}]: {}", i, found.status().message())));
    }
    const Experiment& e = **found;
    auto source = CollectWarmStart({.name = e.name(),
                                    .journal = e.journal_name(),
                                    .param_space = e.spec().param_space,
                                    .metric = e.spec().metric,
                                    .ended = e.phase() == Experiment::Phase::kEnded,
                                    .trials = &e.runner().trials()},
                                   target, i);
    if (!source.ok()) return done(Status::InvalidArgument("search." + source.status().message()));
    spdlog::info("Warm start of {}: {} observations of experiment {} (journal {})", spec.name,
                 (*source)["observations"].size(), e.name(), e.journal_name());
    sources.push_back(std::move(*source));
    ReadWarmStart(spec, std::move(names), i + 1, std::move(sources), std::move(done));
  });
}

void ExperimentHandlers::StartExperiment(const bus::Incoming& in, uint64_t id,
                                         const proto::SubmitExperiment& msg, ExperimentSpec spec,
                                         std::optional<CheckpointRef> restore_from) {
  auto search = SearchOptions::Parse(spec.search, spec.search_config);  // the parser checked it
  if (search.ok() && !search->warm_start.empty()) {
    // The experiments are read first (from the store, for those not in memory); the name is
    // claimed meanwhile. The spec lives in the callback's capture.
    control_.experiments().Claim(spec.name);
    auto held = std::make_shared<ExperimentSpec>(std::move(spec));
    ReadWarmStart(
        *held, search->warm_start, 0, json::array(),
        [this, route = in.route, id, msg, held,
         restore_from = std::move(restore_from)](Result<json> sources) mutable {
          control_.experiments().Release(held->name);
          bus::Incoming back;
          back.route = route;
          if (!sources.ok()) {
            return control_.ReplyError(back, id, proto::SubmitExperiment::kType, sources.status());
          }
          Submit(back, id, msg, std::move(*held), std::move(restore_from), std::move(*sources));
        });
    return;
  }
  Submit(in, id, msg, std::move(spec), std::move(restore_from), nullptr);
}

void ExperimentHandlers::Submit(const bus::Incoming& in, uint64_t id,
                                const proto::SubmitExperiment& msg, ExperimentSpec spec,
                                std::optional<CheckpointRef> restore_from, json warm_start) {
  auto e = control_.experiments().Submit(control_.parts().experiment_context, msg, std::move(spec),
                                         std::move(restore_from), std::move(warm_start));
  if (!e.ok()) return control_.ReplyError(in, id, proto::SubmitExperiment::kType, e.status());
  control_.ReplyJson(
      *e, in, id,
      ExperimentToJson((*e)->name(), (*e)->runner(), (*e)->experiment_dir(), 0, (*e)->driver()));
}

Status ExperimentHandlers::HandleResumeExperiment(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::ResumeExperimentCommand>();
  if (!msg.ok()) return msg.status();
  const auto mode = ParseRerunMode(msg->rerun_errored);
  if (!mode.ok()) {
    return Status::InvalidArgument("--rerun-errored must be restore or restart, got '" +
                                   msg->rerun_errored + "'");
  }
  Experiment* e = nullptr;
  for (const auto& x : control_.experiments().experiments()) {
    if (x->name() == msg->name) e = x.get();
  }
  if (control_.experiments().Claimed(msg->name)) {
    return Status::FailedPrecondition(
        fmt::format("experiment {} is being submitted or resumed; try again", msg->name));
  }
  if (e != nullptr && e->phase() == Experiment::Phase::kResuming) {
    return Status::FailedPrecondition(fmt::format(
        "experiment {} is being resumed (its journal is being read); try again", e->name()));
  }
  if (e != nullptr) {
    if (Status s = control_.JournalWritable(e); !s.ok()) return s;
    ContinueResume(in, d.id(), e, *mode);
    return Status::Ok();
  }
  // Not in this process: the newest journal with that name. Its name is claimed meanwhile.
  control_.experiments().Claim(msg->name);
  const std::function<void(const Status&)> fail = [this, route = in.route, id = d.id(),
                                                   name = msg->name](const Status& s) {
    control_.experiments().Release(name);
    control_.ReplyError(ControlContext::ReplyTo(route), id, proto::ResumeExperimentCommand::kType,
                        s);
  };
  const std::function<void(const JournalSummary&)> resume = [this, route = in.route, id = d.id(),
                                                             mode = *mode, name = msg->name,
                                                             fail](const JournalSummary& j) {
    control_.experiments().journals().ReplayToResume(
        j.journal, j.last_seq,
        [this, route, id, mode, name, fail,
         journal = j.journal](Result<JournalReader::Resumable>&& r) {
          if (!r.ok()) return fail(r.status());
          control_.experiments().Release(name);  // Resume checks the name itself
          control_.experiments().Resume(
              control_.parts().experiment_context, journal, std::move(r->replayed), r->last_seq,
              [this, route, id, mode, fail](Result<Experiment*> resumed) {
                if (!resumed.ok()) return fail(resumed.status());
                ContinueResume(ControlContext::ReplyTo(route), id, *resumed, mode);
              });
        });
  };
  control_.experiments().journals().List([this, name = msg->name, mode = *mode, fail,
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
    control_.experiments().LoadJournaled(
        *newest, [fail, resume, j = *newest](Result<Experiment*> loaded) {
          if (!loaded.ok()) return fail(loaded.status());
          if ((*loaded)->runner().status() != ExperimentStatus::kInterrupted)
            return fail((*loaded)->FinishedError());
          resume(j);
        });
  });
  return Status::Ok();
}

void ExperimentHandlers::ContinueResume(const bus::Incoming& in, uint64_t id, Experiment* e,
                                        RerunMode mode) {
  const std::string type = proto::ResumeExperimentCommand::kType;
  e->recorder().CompleteEnd(true);  // its experiment_ended record comes before what follows
  if (TrialControl(e->runner()).Reopen()) {
    e->journal().Append(
        journal::ExperimentResumed(control_.parts().clock.WallSeconds(), RerunMode::kNone));
    spdlog::info("Experiment {} continues after its interruption", e->name());
  }
  int64_t rerun = 0;
  if (mode != RerunMode::kNone) {
    auto n = TrialControl(e->runner()).RerunErrored(mode);
    if (!n.ok()) return control_.ReplyError(in, id, type, n.status());
    rerun = *n;
    if (rerun > 0)
      e->journal().Append(journal::ExperimentResumed(control_.parts().clock.WallSeconds(), mode));
  }
  if (e->runner().IsFinished()) return control_.ReplyError(in, id, type, e->FinishedError());
  if (e->phase() == Experiment::Phase::kEnded) e->MarkRunning();
  spdlog::info("Experiment {} resumed by tunectl (rerun_errored='{}': {} trials)", e->name(),
               RerunModeName(mode), rerun);
  e->runner().Step();
  json body = ExperimentToJson(e->name(), e->runner(), e->experiment_dir(), 0, e->driver());
  body["rerun"] = rerun;
  control_.ReplyJson(e, in, id, body);
}

Status ExperimentHandlers::HandleListExperiments(bus::Incoming& in, const proto::Decoded& d) {
  // The experiments in memory answer from memory; the others' journals do not change while
  // this scheduler runs, so a recent journal list names them, and their rows are cached by
  // length: an lsx is answered in this call, without waiting for the store.
  if (auto recent = control_.experiments().journals().RecentLengths()) {
    ListExperiments(in.route, d.id(), d.type(), std::move(*recent));
    return Status::Ok();
  }
  control_.experiments().journals().ListLengths(
      [this, route = in.route, id = d.id(),
       type = d.type()](Result<std::vector<JournalLength>> lengths) {
        if (!lengths.ok())
          return control_.ReplyError(ControlContext::ReplyTo(route), id, type, lengths.status());
        ListExperiments(route, id, type, std::move(*lengths));
      });
  return Status::Ok();
}

void ExperimentHandlers::ListExperiments(const std::vector<std::string>& route, uint64_t id,
                                         const std::string& type,
                                         std::vector<JournalLength> lengths) {
  control_.experiments().ListRows(
      std::move(lengths),
      [this](const Experiment& e) { return control_.parts().arbiter.ShareJson(e); },
      [this, route, id, type](Result<json> rows) {
        if (!rows.ok())
          return control_.ReplyError(ControlContext::ReplyTo(route), id, type, rows.status());
        AddExpires(*rows);
        control_.ReplyRead(ControlContext::ReplyTo(route), id, *rows);
      });
}

void ExperimentHandlers::AddExpires(json& rows) const {
  if (retention_ == nullptr) return;
  for (json& row : rows) {
    const std::string status = row.value("status", "");
    if (status == "RUNNING" || status == "INTERRUPTED") continue;
    std::string expires = retention_->Expires(row.value("journal", ""));
    if (expires.empty()) expires = retention_->active() ? "-" : "never";
    row["expires"] = expires;
  }
}

Status ExperimentHandlers::HandleDeleteExperiment(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::DeleteExperiment>();
  if (!msg.ok()) return msg.status();
  return Delete(msg->experiment, msg->keep_results,
                [this, route = in.route, id = d.id(), type = d.type()](Result<json> done) {
                  if (!done.ok())
                    return control_.ReplyError(ControlContext::ReplyTo(route), id, type,
                                               done.status());
                  control_.ReplyRead(ControlContext::ReplyTo(route), id, *done);
                });
}

Status ExperimentHandlers::Delete(const std::string& name, bool keep_results,
                                  std::function<void(Result<json>)> done) {
  if (name.empty()) return Status::InvalidArgument("name the experiment to delete");
  if (control_.experiments().Claimed(name)) {
    return Status::FailedPrecondition(
        fmt::format("experiment {} is being submitted or resumed", name));
  }
  for (const Experiment* e : control_.experiments().Unfinished()) {
    if (e->name() == name || e->journal_name() == name) {
      return Status::FailedPrecondition(
          fmt::format("experiment {} is not finished (journal {}); stop it first: tunectl "
                      "stop-experiment -e {}",
                      e->name(), e->journal_name(), e->journal_name()));
    }
  }
  control_.experiments().FindExperiment(
      name, [this, keep_results, done](Result<Experiment*> found) {
        if (!found.ok()) return done(found.status());
        Experiment* e = *found;
        if (e->read_only()) return DeleteFinished(*e, e->journal_name(), keep_results, done);
        if (e->phase() != Experiment::Phase::kEnded) {
          return done(Status::FailedPrecondition(
              fmt::format("experiment {} is not finished; stop it first", e->journal_name())));
        }
        // Its experiment_ended record (and any late one) reaches the store before the delete: a
        // live experiment stays allocated (retired_), so `e` outlives the wait.
        e->recorder().CompleteEnd(true);
        e->journal().AfterDurable([this, e, keep_results, done] {
          DeleteFinished(*e, e->journal_name(), keep_results, done);
        });
      });
  return Status::Ok();
}

void ExperimentHandlers::DeleteFinished(const Experiment& e, const std::string& journal,
                                        bool keep_results, std::function<void(Result<json>)> done) {
  // The results folder first, then the journal: a kill between the two leaves a finished
  // experiment in the journals, which a second delete (or retention's next pass) completes.
  bool removed = false;
  const std::string dir = e.experiment_dir();
  std::error_code ec;
  if (!keep_results && fs::exists(dir, ec)) {
    fs::remove_all(dir, ec);
    removed = !ec;
    if (ec)
      spdlog::warn("Experiment {}: cannot remove its results {}: {}", journal, dir, ec.message());
  }
  proto::ExperimentDelete request;
  request.experiment = journal;
  // Values only: `e` may leave the read-only cache before the store answers.
  control_.parts().store.Request(request, [this, journal, name = e.name(), dir, removed,
                                           done](Result<proto::Decoded> reply) {
    auto ack = reply.ok() ? reply->As<proto::ExperimentDeleteAck>()
                          : Result<proto::ExperimentDeleteAck>(reply.status());
    if (!ack.ok()) {
      return done(
          Status(ack.status().code(), fmt::format("checkpoint-store: {}", ack.status().message())));
    }
    control_.experiments().Forget(journal);
    spdlog::info(
        "Deleted experiment {}: {} journal records, {} checkpoints; the store's live data {} -> {} "
        "bytes; results {} {}",
        journal, ack->records, ack->checkpoints, ack->bytes_before, ack->bytes_after, dir,
        removed ? "removed" : "kept");
    done(json{{"name", name},
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

Status ExperimentHandlers::HandleStopExperiment(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::StopExperiment>();
  if (!msg.ok()) return msg.status();
  auto target = control_.Target(msg->experiment);
  if (!target.ok()) return target.status();
  Experiment* e = *target;
  if (msg->interrupt) {
    TrialControl(e->runner()).InterruptExperiment("interrupted by the user");
  } else {
    TrialControl(e->runner()).StopExperiment("stopped by the user");
  }
  control_.ReplyJson(
      e, in, d.id(),
      ExperimentToJson(e->name(), e->runner(), e->experiment_dir(), e->ElapsedS(), e->driver()));
  return Status::Ok();
}

Status ExperimentHandlers::HandleGetExperiment(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::GetExperiment>();
  if (!msg.ok()) return msg.status();
  control_.AnswerRead(in, d, msg->experiment, [this](Result<Experiment*> found) -> Result<json> {
    if (!found.ok()) return found.status();
    const Experiment* e = *found;
    json body =
        ExperimentToJson(e->name(), e->runner(), e->experiment_dir(), e->ElapsedS(), e->driver());
    // Finished once its end is journaled (`tunectl run` returns then): a scheduler stopped
    // right after resumes nothing of it.
    if (!e->read_only() && !e->recorder().end_durable()) body["finished"] = false;
    body["journal"] = e->journal_name();
    body["read_only"] = e->read_only();
    if (!e->read_only()) body.update(control_.parts().arbiter.ShareJson(*e));
    // Where `tunectl watch` subscribes.
    body["events_endpoint"] = control_.options().events_endpoint;
    if (!e->read_only()) body["journal_health"] = JournalHealthJson(*e);
    body["store"] = control_.parts().store_health.ToJson();
    body["version"] = Version();  // this scheduler's (since v1.12)
    return body;
  });
  return Status::Ok();
}

Status ExperimentHandlers::HandleSetExperimentWeight(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::SetExperimentWeight>();
  if (!msg.ok()) return msg.status();
  if (!(msg->weight > 0) || !std::isfinite(msg->weight)) {
    return Status::InvalidArgument(fmt::format("weight must be a number > 0, got {}", msg->weight));
  }
  auto target = control_.Target(msg->experiment);
  if (!target.ok()) return target.status();
  Experiment* e = *target;
  if (e->phase() == Experiment::Phase::kEnded) {
    return Status::FailedPrecondition(fmt::format("experiment {} is finished", e->name()));
  }
  spdlog::info("Experiment {}: weight {} -> {} (tunectl set-weight)", e->name(), e->weight(),
               msg->weight);
  e->SetWeight(msg->weight);
  json body =
      ExperimentToJson(e->name(), e->runner(), e->experiment_dir(), e->ElapsedS(), e->driver());
  body.update(control_.parts().arbiter.ShareJson(*e));
  control_.ReplyJson(e, in, d.id(), body);
  return Status::Ok();
}

}  // namespace tunebus
