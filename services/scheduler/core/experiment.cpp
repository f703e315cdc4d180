#include "services/scheduler/core/experiment.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cassert>
#include <filesystem>
#include <random>

#include "libs/bus/curve_keys.hpp"
#include "libs/journal/records.hpp"
#include "libs/journal/snapshot.hpp"
#include "libs/spec/runner_options.hpp"
#include "libs/tune/make_searcher.hpp"
#include "libs/tune/make_trial_scheduler.hpp"
#include "libs/tune/variant_generator.hpp"
#include "services/scheduler/control/trial_json.hpp"
#include "services/scheduler/store/bus_journal_sink.hpp"

namespace tunebus {

namespace fs = std::filesystem;

namespace {

// Result file tasks (about two per trial) behind which placement waits for the file writer.
constexpr size_t kMaxFileBacklogToPlace = 8192;

// Seconds from the submission to the newest result any trial reported (a journal has no end time).
double ElapsedToLastResult(const std::vector<Trial>& trials, double submitted_at_s) {
  double last = submitted_at_s;
  for (const Trial& t : trials) {
    if (!t.last_result_msgpack.empty())
      last = std::max(last, t.LastResult().value("timestamp", 0.0));
  }
  return last - submitted_at_s;
}

// An experiment file's server_key as the link takes it: a Z85 key or "" as is, a key file's
// path made absolute against the file's folder `base_dir` (docs/reference/search.md).
std::string KeyRelativeTo(const std::string& server_key, const std::string& base_dir) {
  if (server_key.empty() || bus::IsZ85Key(server_key) || base_dir.empty()) return server_key;
  const fs::path path(server_key);
  return path.is_absolute() ? server_key : (fs::path(base_dir) / path).string();
}

}  // namespace

NoEffects& NoEffects::Instance() {
  static NoEffects instance;
  return instance;
}

void NoEffects::PlaceTrial(const Trial& trial, int64_t attempt) {
  (void)attempt;
  Refuse("PlaceTrial", trial);
}

void NoEffects::DeleteCheckpoint(const std::string& checkpoint_id) {
  spdlog::error("Ignoring DeleteCheckpoint {} of a read-only experiment", checkpoint_id);
}

void NoEffects::Refuse(const char* what, const Trial& trial) {
  spdlog::error("Ignoring {} for trial {} of a read-only experiment", what, trial.trial_id);
}

Experiment::Experiment(ExperimentSpec spec, std::string experiment_dir, ExperimentIdentity identity,
                       const Clock& clock, ExperimentContext* ctx)
    : spec_(std::move(spec)),
      experiment_dir_(std::move(experiment_dir)),
      identity_(std::move(identity)),
      journal_name_(spec_.name + "-" + identity_.experiment_id),
      clock_(clock),
      ctx_(ctx),
      read_only_(ctx == nullptr),
      phase_(read_only_ ? Phase::kEnded : Phase::kRunning),
      weight_(spec_.weight),
      started_(clock.Now()) {
  // Every start_trial names the archive the experiment was submitted (and journaled) with.
  spec_.trainable.working_dir_digest = identity_.working_dir_digest;
  spec_.trainable.working_dir_size_bytes = identity_.working_dir_size_bytes;
}

Experiment::~Experiment() = default;

void Experiment::MarkEnded() {
  phase_ = Phase::kEnded;
  ended_ = clock_.Now();
  if (searcher_process_) searcher_process_->Stop();
}

bool Experiment::Quiet() const {
  if (read_only_ || phase_ != Phase::kEnded || !recorder_->end_durable()) return false;
  const journal::JournalWriter& j = *journal_;
  return j.state() == journal::JournalWriter::State::kOk && j.durable() == j.appended() &&
         recorder_->FilesWritten() && runner_->phases().in_flight() == 0 &&
         runner_->phases().saving() == 0 && executor_->Idle() && !snapshot_in_flight_ &&
         awaiting_reattach_.empty();
}

void Experiment::SetWeight(double weight) {
  assert(weight > 0 && !read_only_);
  weight_ = weight;
  journal_->Append(journal::WeightSet(weight));
}

int64_t Experiment::Wanted() const {
  const int64_t wanted =
      runner_->phases().in_flight() + runner_->phases().count(RunnerPhase::kQueued);
  return spec_.max_concurrent_trials > 0 ? std::min(wanted, spec_.max_concurrent_trials) : wanted;
}

Resources Experiment::Held() const {
  Resources held;
  for (const Trial& t : runner_->trials()) {
    if (t.status == TrialStatus::kRunning) held += t.resources;
  }
  return held;
}

Status Experiment::FinishedError() const {
  const int64_t errored = TrialCountsJson(runner_->trials())["ERROR"].get<int64_t>();
  return Status::FailedPrecondition(fmt::format(
      "experiment {} is finished ({}); nothing to resume{}", name(), runner_->end_reason(),
      errored > 0
          ? fmt::format(" — rerun its {} errored trials with --rerun-errored=restore|restart",
                        errored)
          : ""));
}

int64_t Experiment::Preempt(int64_t quota) {
  std::vector<const Trial*> running;  // RUNNING, not already pausing
  for (const Trial& t : runner_->trials()) {
    if (t.status == TrialStatus::kRunning && !runner_->phases().IsPausing(t.index))
      running.push_back(&t);
  }
  // The newest-started first: they lose the least work (YARN's and Determined's choice).
  std::sort(running.begin(), running.end(),
            [](const Trial* a, const Trial* b) { return a->start_time_s > b->start_time_s; });
  int64_t paused = 0;
  for (const Trial* t : running) {
    if (int64_t(running.size()) - paused <= quota) break;
    const std::string trial_id = t->trial_id;
    if (!TrialControl(*runner_).PauseTrial(trial_id).ok()) continue;
    spdlog::info("Preempting trial {} of experiment {}: it holds more than its fair share ({})",
                 trial_id, spec_.name, quota);
    if (std::find(preempted_.begin(), preempted_.end(), trial_id) == preempted_.end())
      preempted_.push_back(trial_id);
    ++paused;
  }
  if (paused > 0) journal_->Append(journal::TrialsPreempted(preempted_));
  return paused;
}

void Experiment::Readmit(std::optional<int64_t> quota) {
  if (preempted_.empty() || phase_ != Phase::kRunning) return;
  const size_t before = preempted_.size();
  while (!preempted_.empty() && (!quota || runner_->phases().in_flight() < *quota)) {
    const std::string trial_id = preempted_.front();
    preempted_.erase(preempted_.begin());
    if (TrialControl(*runner_).UnpauseTrial(trial_id).ok()) {
      spdlog::info("Trial {} of experiment {} continues after its preemption", trial_id,
                   spec_.name);
    }
  }
  if (preempted_.size() != before) journal_->Append(journal::TrialsPreempted(preempted_));
}

void Experiment::MarkRunning() {
  assert(phase_ == Phase::kEnded && !runner_->IsFinished());
  phase_ = Phase::kRunning;
  ended_.reset();
}

Result<std::unique_ptr<SearcherLink>> Experiment::LinkSearcher(const SearcherTarget& target) {
  const std::string server_key = KeyRelativeTo(target.server_key, identity_.base_dir);
  if (target.command.empty()) return ctx_->connect_searcher(target.endpoint, server_key);
  SearcherProcess::Options o{.command = target.command,
                             .endpoint = target.endpoint,
                             .working_dir = identity_.base_dir,
                             .log_path = (fs::path(experiment_dir_) / "searcher.log").string(),
                             .backoff_initial_s = target.backoff_initial_s,
                             .backoff_max_s = target.backoff_max_s};
  auto process = SearcherProcess::Create(ctx_->loop, std::move(o));
  if (!process.ok()) return process.status();
  std::unique_ptr<SearcherLink> link = ctx_->connect_searcher((*process)->endpoint(), server_key);
  searcher_process_ = std::move(*process);
  return std::unique_ptr<SearcherLink>(
      new SpawnedSearcherLink(std::move(link), *searcher_process_));
}

Result<std::unique_ptr<Experiment>> Experiment::Create(ExperimentContext& ctx, ExperimentSpec spec,
                                                       std::string experiment_dir,
                                                       ExperimentIdentity identity) {
  std::unique_ptr<Experiment> e(new Experiment(std::move(spec), std::move(experiment_dir),
                                               std::move(identity), ctx.clock, &ctx));
  if (Status s = e->Build(); !s.ok()) return s;
  return e;
}

Result<std::unique_ptr<Experiment>> Experiment::LoadReadOnly(
    ExperimentSpec spec, std::string experiment_dir, const std::string& journal_name,
    journal::ReplayedExperiment replayed, uint64_t journal_length, const Clock& clock) {
  ExperimentIdentity identity = replayed.identity;
  std::unique_ptr<Experiment> e(new Experiment(std::move(spec), std::move(experiment_dir),
                                               std::move(identity), clock, nullptr));
  if (Status s = e->Build(); !s.ok()) return s;
  if (e->journal_name_ != journal_name) {
    return Status::Corruption(
        fmt::format("journal {} holds experiment {}", journal_name, e->journal_name_));
  }
  e->journal_base_ = journal_length;
  if (replayed.weight) e->weight_ = *replayed.weight;
  const double elapsed_s = ElapsedToLastResult(replayed.trials, replayed.identity.submitted_at_s);
  e->ended_ = clock.Now();
  e->started_ = *e->ended_ - std::chrono::duration_cast<SteadyTime::duration>(
                                 std::chrono::duration<double>(elapsed_s));
  // A journal without experiment_ended (its scheduler died and it was never resumed) is what lsx
  // calls INTERRUPTED.
  const ExperimentStatus status = replayed.ended_status.value_or(ExperimentStatus::kInterrupted);
  RunnerRestore restored{.trials = std::move(replayed.trials),
                         .searcher_state = std::move(replayed.searcher_state),
                         .searcher_deltas = std::move(replayed.searcher_deltas),
                         .last_actions = std::move(replayed.last_action),
                         .start_s = replayed.identity.submitted_at_s,
                         .ended_status = status,
                         .ended_reason = replayed.ended_reason};
  if (Status s = e->runner_->Restore(std::move(restored)); !s.ok()) return s;
  return e;
}

Status Experiment::Build() {
  auto scheduler = MakeTrialScheduler(spec_.scheduler, spec_.scheduler_config, spec_.metric,
                                      spec_.mode, identity_.seed);
  if (!scheduler.ok()) return scheduler.status();
  TrialExecutor* executor = &NoEffects::Instance();
  RunnerObserver* observer = &NoEffects::Instance();
  if (!read_only_) {
    journal_ = std::make_unique<journal::JournalWriter>(
        std::make_unique<BusJournalSink>(ctx_->loop, ctx_->journal_appends), journal_name_);
    recorder_ = std::make_unique<ExperimentRecorder>(spec_.name, experiment_dir_, *journal_,
                                                     ctx_->publisher, ctx_->result_files, clock_);
    executor_ =
        std::make_unique<BusExecutor>(ctx_->loop, ctx_->placements, ctx_->store, ctx_->outbox,
                                      *journal_, spec_, experiment_dir_, journal_name_);
    executor = executor_.get();
    observer = recorder_.get();
  }
  Result<RunnerOptions> ro =
      MakeRunnerOptions(spec_, identity_.experiment_id, identity_.restore_from);
  if (!ro.ok()) return ro.status();
  SearchSetup setup;
  setup.param_space = spec_.param_space;
  setup.num_samples = spec_.num_samples;
  setup.metric = spec_.metric;
  setup.mode = spec_.mode;
  setup.objectives = spec_.objectives;
  setup.seed = identity_.seed;
  setup.max_concurrent_trials = spec_.max_concurrent_trials;
  setup.experiment = journal_name_;
  setup.warm_start = identity_.warm_start;
  if (!read_only_) {
    setup.session_nonce = std::random_device{}() ^ (uint64_t(std::random_device{}()) << 32);
    setup.connect_external = [this](const SearcherTarget& target) { return LinkSearcher(target); };
    setup.ask_driver = [this](const std::string& trial_id, nlohmann::json config,
                              std::vector<DriverLink::KeyPath> paths,
                              DriverLink::SampleCallback done) {
      AskDriverSamples(trial_id, std::move(config), std::move(paths), std::move(done));
    };
  }
  auto searcher = MakeSearcher(spec_.search, spec_.search_config, setup);
  if (!searcher.ok()) return searcher.status();
  runner_ = std::make_unique<TrialRunner>(std::move(*ro), std::move(*searcher),
                                          std::move(*scheduler), *executor, *observer, clock_);
  if (read_only_) return Status::Ok();
  const bool samples_from_driver = !VariantGenerator::SampleFromPaths(spec_.param_space).empty();
  if (spec_.driver && (spec_.driver->on_result || samples_from_driver) && ctx_->connect_driver) {
    DriverOptions d;
    d.endpoint = spec_.driver->endpoint;
    d.on_result = spec_.driver->on_result;
    d.timeout_s = spec_.driver->timeout_s;
    driver_ = std::make_unique<DriverLink>(
        d, journal_name_, spec_.metric, spec_.mode, setup.session_nonce,
        ctx_->connect_driver(d.endpoint,
                             KeyRelativeTo(spec_.driver->server_key, identity_.base_dir)));
    driver_->SetAnswerCallback(
        [this](const std::string& trial_id, int64_t attempt, int64_t seq, DriverAnswer answer) {
          runner_->OnDriverAnswer(trial_id, attempt, seq, answer);
          runner_->Step();
        });
    if (d.on_result) runner_->SetDriver(driver_.get());
  }
  executor_->set_runner(runner_.get());
  recorder_->set_runner(runner_.get());
  executor_->set_on_unreachable([this](const Trial& t) {
    const Trial* now = runner_->FindTrial(t.trial_id);
    if (now == nullptr || now->attempt != t.attempt || now->status != TrialStatus::kRunning) return;
    runner_->RequeueLost(t.trial_id, fmt::format("worker {} is not connected", t.worker_id));
  });
  executor_->set_is_registered(ctx_->is_registered);
  // No trial starts while its result files would queue behind many others (a slow disk).
  // Nor beyond its fair share of a cluster other experiments want too.
  executor_->set_may_place([this] {
    return recorder_->FileBacklog() < kMaxFileBacklogToPlace &&
           (!trial_quota_ || runner_->phases().in_flight() < *trial_quota_);
  });
  return Status::Ok();
}

void Experiment::AskDriverSamples(const std::string& trial_id, nlohmann::json config,
                                  std::vector<DriverLink::KeyPath> paths,
                                  DriverLink::SampleCallback done) {
  if (driver_ == nullptr) {
    done(DriverSamples{.error = "the experiment has no driver link (its 'driver' section)"});
    return;
  }
  driver_->Sample(trial_id, std::move(config), std::move(paths),
                  [this, done = std::move(done)](DriverSamples samples) {
                    if (!samples.error.empty()) {
                      spdlog::error(
                          "Experiment {}: the driver's sample_from failed, so no new "
                          "trial starts: {}",
                          spec_.name, samples.error);
                    }
                    done(std::move(samples));
                    runner_->Step();
                  });
}

void Experiment::Submit(const std::string& spec_yaml) {
  journal_->Append(journal::ExperimentSubmitted(identity_, spec_yaml));
  spdlog::info("Experiment {} ({} trials{}) submitted; journal {}", spec_.name,
               runner_->TotalTrials(), spec_.seed ? fmt::format(", seed {}", identity_.seed) : "",
               journal_name_);
  runner_->Step();
}

Status Experiment::Resume(JournalReader& reader, const std::string& journal_name,
                          journal::ReplayedExperiment replayed, uint64_t store_last_seq,
                          bus::Duration reattach_grace, std::function<void()> resumed) {
  const SteadyTime t0 = clock_.Now();
  if (journal_name_ != journal_name) {
    return Status::Corruption(
        fmt::format("journal {} holds experiment {}", journal_name, journal_name_));
  }
  phase_ = Phase::kResuming;
  if (replayed.weight) weight_ = *replayed.weight;
  preempted_ = std::move(replayed.preempted);
  journal_base_ = store_last_seq;
  // The next snapshot is due snapshot_every_records after the one this resume started from, so
  // replay stays bounded even when the scheduler dies more often than that.
  last_snapshot_seq_ = replayed.snapshot_records;
  if (replayed.snapshot_records > 0)
    last_snapshot_id_ = journal::SnapshotId(journal_name, replayed.snapshot_records);
  journal_->set_store_seq(store_last_seq);
  for (const Trial& t : replayed.trials) {
    if (t.status == TrialStatus::kRunning || (StoresEndCheckpoint(t) && !t.worker_id.empty()))
      awaiting_reattach_.insert(t.trial_id);
  }
  const size_t trials = replayed.trials.size();
  RunnerRestore restored{
      .trials = std::move(replayed.trials),
      .searcher_state = std::move(replayed.searcher_state),
      .searcher_deltas = std::move(replayed.searcher_deltas),
      .trial_scheduler = TrialSchedulerJournal{std::move(replayed.scheduler_state),
                                               std::move(replayed.scheduler_deltas)},
      .last_actions = std::move(replayed.last_action),
      .driver_answers = std::move(replayed.driver_answers),
      .start_s = replayed.identity.submitted_at_s,
      .ended_status = replayed.ended_status.value_or(ExperimentStatus::kRunning),
      .ended_reason = replayed.ended_reason};
  if (Status s = runner_->Restore(std::move(restored)); !s.ok()) return s;
  if (!runner_->IsFinished())
    journal_->Append(journal::ExperimentResumed(clock_.WallSeconds(), RerunMode::kNone));
  spdlog::info(
      "Resumed experiment {} from journal {}: {} records ({} from a snapshot), {} trials, {} "
      "running to reattach ({:.3f} s)",
      spec_.name, journal_name, replayed.records, replayed.snapshot_records, trials,
      awaiting_reattach_.size(), clock_.SecondsSince(t0));
  RepairResultFiles(reader, store_last_seq, [this, reattach_grace, resumed = std::move(resumed)] {
    recorder_->WriteStateFile();
    ReconcileAllocations();
    AdoptStoredCheckpoints();
    ctx_->loop.AddTimer(reattach_grace, [this] { RequeueUnattached(); });
    phase_ = runner_->IsFinished() ? Phase::kEnded : Phase::kRunning;
    if (phase_ == Phase::kEnded && !ended_) ended_ = clock_.Now();
    resumed();
  });
  return Status::Ok();
}

void Experiment::AfterRound(int64_t snapshot_every_records) {
  recorder_->CompleteEnd(false);
  executor_->Flush();
  MaybeSnapshot(snapshot_every_records);
  journal_->Flush();
  recorder_->FlushFiles();
}

void Experiment::OnCheckpointFailed(const std::string& worker,
                                    const proto::CheckpointFailed& failed) {
  const Trial* t = runner_->FindTrial(failed.trial_id);
  const bool was_running =
      t != nullptr && t->status == TrialStatus::kRunning && !runner_->phases().IsPausing(t->index);
  const Status noted = runner_->OnCheckpointFailed(failed.trial_id, failed.attempt,
                                                   failed.training_iteration, failed.error);
  if (!noted.ok()) {
    spdlog::warn("Checkpoint {} from {} was not stored ({}); not noted on its trial because {}",
                 failed.checkpoint_id, worker, failed.error, noted.message());
    return;
  }
  t = runner_->FindTrial(failed.trial_id);
  std::string then = "; the trial had already stopped or paused for it";
  if (was_running) {
    switch (spec_.checkpoint_failure) {
      case CheckpointFailureMode::kContinue:
        then = "; the trial runs on (checkpoint_failure: continue)";
        break;
      case CheckpointFailureMode::kPause:
        then = "; the trial pauses at its next result (checkpoint_failure: pause)";
        break;
      case CheckpointFailureMode::kFail:
        if (t->status == TrialStatus::kError) {
          then = fmt::format("; ERROR (checkpoint_failure: fail), see {}/{}/error.txt",
                             experiment_dir_, t->DirName());
        } else {
          recorder_->WriteErrorFile(*t, t->error);  // as a trainable failure's requeue has
          then = fmt::format(
              "; requeued (checkpoint_failure: fail; failure {} of max_failures {})",
              t->num_failures,
              spec_.max_failures < 0 ? "unlimited" : std::to_string(spec_.max_failures));
        }
        break;
    }
  }
  spdlog::warn("Trial {} attempt {}: checkpoint at iteration {} was not stored on worker {}: {}{}",
               failed.trial_id, failed.attempt, failed.training_iteration, worker, failed.error,
               then);
}

double Experiment::ElapsedS() const {
  return std::chrono::duration<double>(ended_.value_or(clock_.Now()) - started_).count();
}

}  // namespace tunebus
