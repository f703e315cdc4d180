#include "libs/tune/pbt_scheduler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "libs/core/fields.hpp"
#include "libs/tune/scheduler_params.hpp"
#include "libs/tune/variant_generator.hpp"

namespace tunebus {

using nlohmann::json;

namespace {

bool IsSampler(const json& v) {
  return v.is_object() && v.size() == 1 && !v.begin()->is_object() &&
         VariantGenerator::Validate(json{{"x", v}}).ok();
}

// `{driver: {}}`: a mutation whose resampled value the driver's function draws
// (proto/PROTOCOL.md section 7b, DriverAnswer::samples).
bool IsDriverMutation(const json& v) {
  return v.is_object() && v.size() == 1 && v.contains("driver") && v["driver"].is_object() &&
         v["driver"].empty();
}

// Checks hyperparam_mutations: lists (non-empty), samplers, driver mutations, or nested maps of
// those.
Status ValidateMutations(const json& m, const std::string& path) {
  if (!m.is_object() || m.empty()) {
    return Status::InvalidArgument(path +
                                   ": must be a non-empty map of config keys to lists or samplers");
  }
  for (const auto& [key, v] : m.items()) {
    const std::string where = path + "." + key;
    if (v.is_array()) {
      if (v.empty()) return Status::InvalidArgument(where + ": the list is empty");
    } else if (IsDriverMutation(v)) {
      continue;
    } else if (v.is_object() && v.size() == 1 && v.contains("driver")) {
      return Status::InvalidArgument(
          where +
          ".driver: takes no parameters ({driver: {}}: the driver's function resamples it)");
    } else if (v.is_object() && v.size() == 1 &&
               (v.contains("choice") || v.contains("grid_search"))) {
      if (!v.begin()->is_array() || v.begin()->empty())
        return Status::InvalidArgument(where + ": needs a non-empty list");
    } else if (v.is_object() && v.size() == 1 && !v.begin()->is_object()) {
      if (Status s = VariantGenerator::Validate(json{{key, v}}); !s.ok()) {
        return Status::InvalidArgument(path + "." + s.message());
      }
    } else if (v.is_object()) {
      if (Status s = ValidateMutations(v, where); !s.ok()) return s;
    } else {
      return Status::InvalidArgument(
          where + ": must be a list, a sampler such as {uniform: [a, b]} or a map");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<TrialScheduler>> PopulationBasedTraining::Create(const json& config,
                                                                        const std::string& metric,
                                                                        const std::string& mode,
                                                                        uint64_t seed) {
  SchedulerParams p(config, "pbt");
  if (Status s = p.OnlyKnown({"time_attr", "perturbation_interval", "burn_in_period",
                              "hyperparam_mutations", "quantile_fraction", "resample_probability",
                              "perturbation_factors"});
      !s.ok()) {
    return s;
  }
  Options o;
  if (Status s = p.MetricAndMode(metric, mode, &o.metric, &o.mode); !s.ok()) return s;
  auto time_attr = p.String("time_attr", o.time_attr);
  auto interval = p.Number("perturbation_interval", o.perturbation_interval, 0, /*exclusive=*/true);
  auto burn_in = p.Number("burn_in_period", o.burn_in_period, 0);
  auto quantile = p.Number("quantile_fraction", o.quantile_fraction, 0);
  auto resample = p.Number("resample_probability", o.resample_probability, 0);
  for (const Status& s : {time_attr.status(), interval.status(), burn_in.status(),
                          quantile.status(), resample.status()}) {
    if (!s.ok()) return s;
  }
  if (*quantile > 0.5)
    return Status::InvalidArgument(
        fmt::format("quantile_fraction: must be <= 0.5, got {}", *quantile));
  if (*resample > 1)
    return Status::InvalidArgument(
        fmt::format("resample_probability: must be <= 1, got {}", *resample));
  const json& c = p.config();
  if (!c.contains("hyperparam_mutations")) {
    return Status::InvalidArgument(
        "hyperparam_mutations: the pbt scheduler needs the config keys to explore");
  }
  if (Status s = ValidateMutations(c["hyperparam_mutations"], "hyperparam_mutations"); !s.ok())
    return s;
  if (c.contains("perturbation_factors")) {
    const json& f = c["perturbation_factors"];
    if (!f.is_array() || f.size() != 2 || !f[0].is_number() || !f[1].is_number()) {
      return Status::InvalidArgument("perturbation_factors: must be [up, down], two numbers");
    }
    o.factor_up = f[0].get<double>();
    o.factor_down = f[1].get<double>();
  }
  o.time_attr = *time_attr;
  o.perturbation_interval = *interval;
  o.burn_in_period = *burn_in;
  o.quantile_fraction = *quantile;
  o.resample_probability = *resample;
  o.hyperparam_mutations = c["hyperparam_mutations"];
  return std::unique_ptr<TrialScheduler>(new PopulationBasedTraining(std::move(o), seed));
}

PopulationBasedTraining::PopulationBasedTraining(Options options, uint64_t seed)
    : options_(std::move(options)), seed_(seed), rng_(seed) {
  sign_ = options_.mode == "min" ? -1 : 1;
}

double PopulationBasedTraining::Uniform() {
  ++draws_;
  return double(rng_() >> 11) * 0x1.0p-53;
}

size_t PopulationBasedTraining::Choice(size_t n) {
  return std::min(n - 1, size_t(Uniform() * double(n)));
}

Status PopulationBasedTraining::ValidateResult(const TrainingResult& result) const {
  return RequireNumbers(result, {{"metric", options_.metric}, {"time_attr", options_.time_attr}});
}

void PopulationBasedTraining::OnTrialAdd(const Trial& trial) { Record({{"add", trial.trial_id}}); }

bool PopulationBasedTraining::HasDriverMutations(const json& mutations) {
  for (const auto& [key, dist] : mutations.items()) {
    if (IsDriverMutation(dist)) return true;
    if (dist.is_object() && !IsSampler(dist) && HasDriverMutations(dist)) return true;
  }
  return false;
}

json PopulationBasedTraining::Explore(const json& config, const json& mutations,
                                      const json* driver_samples, const std::string& prefix) {
  json out = config;
  for (const auto& [key, dist] : mutations.items()) {
    const bool has = config.contains(key);
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    if (IsDriverMutation(dist)) {
      // Ray Tune's _explore for a callable: resample (call it), else perturb a number by a
      // factor. The driver called it for this result; without its sample the value is perturbed
      // (a number) or kept.
      const bool sampled = driver_samples != nullptr && driver_samples->contains(path);
      const bool numeric = has && config[key].is_number();
      if (sampled && (Uniform() < options_.resample_probability || !numeric)) {
        out[key] = (*driver_samples)[path];
      } else if (numeric) {
        const double factor = Uniform() > 0.5 ? options_.factor_up : options_.factor_down;
        const double v = config[key].get<double>() * factor;
        out[key] = config[key].is_number_integer() ? json(int64_t(v)) : json(v);
      }
      continue;
    }
    if (dist.is_object() && !dist.contains("choice") && !dist.contains("grid_search") &&
        !IsSampler(dist)) {
      out[key] = Explore(has ? config[key] : json::object(), dist, driver_samples,
                         path);  // a nested map
      continue;
    }
    const json* values =
        dist.is_array() ? &dist : (dist.contains("choice") ? &dist["choice"] : nullptr);
    if (values == nullptr && dist.contains("grid_search")) values = &dist["grid_search"];
    if (values != nullptr) {
      // Ray Tune: resample, else move to the previous or the next value in the list.
      auto at = has ? std::find(values->begin(), values->end(), config[key]) : values->end();
      if (Uniform() < options_.resample_probability || at == values->end()) {
        out[key] = (*values)[Choice(values->size())];
      } else {
        const size_t i = size_t(at - values->begin());
        out[key] = Uniform() > 0.5 ? (*values)[i == 0 ? 0 : i - 1]
                                   : (*values)[std::min(values->size() - 1, i + 1)];
      }
      continue;
    }
    // A sampler: resample it, else multiply by a perturbation factor (ints stay ints).
    if (Uniform() < options_.resample_probability || !has || !config[key].is_number()) {
      ++draws_;
      VariantGenerator one(json{{key, dist}}, 1, rng_());
      out[key] = one.Next().config[key];
    } else {
      const double factor = Uniform() > 0.5 ? options_.factor_up : options_.factor_down;
      const double v = config[key].get<double>() * factor;
      out[key] = config[key].is_number_integer() ? json(int64_t(v)) : json(v);
    }
  }
  return out;
}

// Ray Tune (2.x, PopulationBasedTraining._checkpoint_or_exploit) clones the donor's checkpoint
// of its perturbation point: the save it asked of an upper-quantile trial, in progress or done,
// and skips the exploit of a donor without a checkpoint. A donor's checkpoint reaches the runner
// once the store holds it, so a newest checkpoint older than the donor's last perturbation
// (its checkpoint of that point not stored yet) is skipped too: the trial exploits at a later
// perturbation instead of resuming from an older state. A time_attr the checkpoint does not
// carry is not checked.
bool PopulationBasedTraining::HoldsPerturbation(const CheckpointRef& newest,
                                                double perturbation_time) const {
  if (options_.time_attr == "training_iteration")
    return double(newest.training_iteration) >= perturbation_time;
  if (options_.time_attr == "time_total_s")  // the same double, through the journal's text
    return newest.time_total_s >= perturbation_time * (1 - 1e-12);
  return true;
}

Decision PopulationBasedTraining::OnTrialResult(const Trial& trial, const TrainingResult& result) {
  const double time = result.Number(options_.time_attr).value_or(0.0);
  auto it = trials_.find(trial.trial_id);
  if (it == trials_.end()) {
    Record({{"add", trial.trial_id}});
    it = trials_.find(trial.trial_id);
  }
  if (it->second.paused_by_us) Record({{"run", trial.trial_id}});
  if (time < options_.burn_in_period) return Decision::kContinue;
  if (time - it->second.last_perturbation_time < options_.perturbation_interval)
    return Decision::kContinue;
  Record({{"score", {trial.trial_id, time, sign_ * result.Number(options_.metric).value_or(0.0)}}});

  // Ray Tune's _quantiles: unfinished trials with a score, ascending; ceil(n * q) each, at most
  // n / 2 (a TERMINATED or ERROR trial is neither exploited nor a donor).
  std::vector<std::pair<double, std::string>> scored;
  for (const auto& [id, s] : trials_) {
    const Trial* t = context_->FindTrial(id);
    if (s.last_score && t != nullptr && !IsFinished(t->status))
      scored.emplace_back(*s.last_score, id);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> lower, upper;
  if (scored.size() > 1) {
    size_t k = size_t(std::ceil(double(scored.size()) * options_.quantile_fraction));
    k = std::min(k, scored.size() / 2);
    for (size_t i = 0; i < k; ++i) {
      lower.push_back(scored[i].second);
      upper.push_back(scored[scored.size() - k + i].second);
    }
  }
  Decision decision = Decision::kContinue;
  for (const Trial& t : context_->trials()) {
    if (t.trial_id != trial.trial_id &&
        (t.status == TrialStatus::kPending || t.status == TrialStatus::kPaused)) {
      decision = Decision::kPause;
      break;
    }
  }
  const uint64_t draws_before = draws_;
  if (std::find(upper.begin(), upper.end(), trial.trial_id) != upper.end()) {
    context_->RequestCheckpoint(trial.trial_id);
  }
  if (std::find(lower.begin(), lower.end(), trial.trial_id) != lower.end()) {
    const std::string donor = upper[Choice(upper.size())];
    const Trial* d = context_->FindTrial(donor);
    if (d != nullptr && !d->checkpoints.empty() && d->newest_checkpoint_has_config &&
        HoldsPerturbation(d->checkpoints.back(), trials_[donor].last_perturbation_time)) {
      json new_config = Explore(d->config, options_.hyperparam_mutations,
                                context_->DriverSamples(trial.trial_id));
      if (context_->ExploitTrial(trial.trial_id, donor, std::move(new_config)).ok()) {
        Record({{"exploit", {trial.trial_id, donor}}});
      }
    }
  }
  if (draws_ != draws_before) Record({{"draws", draws_}});  // Apply: already there, a no-op
  if (decision == Decision::kPause) Record({{"pause", trial.trial_id}});
  return decision;
}

std::optional<std::string> PopulationBasedTraining::ChoosePausedTrialToRun() {
  for (const auto& [id, s] : trials_) {
    if (!s.paused_by_us) continue;
    const Trial* t = context_->FindTrial(id);
    if (t != nullptr && t->status == TrialStatus::kPaused) return id;
  }
  return std::nullopt;
}

Status PopulationBasedTraining::Apply(const json& e) {
  try {
    if (e.contains("add")) {
      trials_.try_emplace(e["add"].get<std::string>());
    } else if (e.contains("score")) {
      TrialState& s = trials_[e["score"].at(0).get<std::string>()];
      const double time = e["score"].at(1).get<double>();
      s.last_score = e["score"].at(2).get<double>();
      s.last_train_time = time;
      s.last_perturbation_time = time;
    } else if (e.contains("pause")) {
      trials_[e["pause"].get<std::string>()].paused_by_us = true;
    } else if (e.contains("run")) {
      trials_[e["run"].get<std::string>()].paused_by_us = false;
    } else if (e.contains("exploit")) {
      // Ray Tune transfers the donor's perturbation and train times to the exploiting trial.
      const TrialState donor = trials_[e["exploit"].at(1).get<std::string>()];
      TrialState& s = trials_[e["exploit"].at(0).get<std::string>()];
      s.last_perturbation_time = donor.last_perturbation_time;
      s.last_train_time = donor.last_train_time;
    } else if (e.contains("draws")) {
      const uint64_t n = fields::GetInteger<uint64_t>(e["draws"]);
      if (n < draws_) {
        rng_.seed(seed_);
        draws_ = 0;
      }
      rng_.discard(n - draws_);
      draws_ = n;
    } else {
      return Status::Corruption("pbt: unknown state event " + e.dump());
    }
  } catch (const json::exception& ex) {
    return Status::Corruption(std::string("pbt: malformed state event: ") + ex.what());
  }
  return Status::Ok();
}

json PopulationBasedTraining::SaveState() const {
  json trials = json::object();
  for (const auto& [id, s] : trials_) {
    trials[id] = {{"last_score", s.last_score ? json(*s.last_score) : json(nullptr)},
                  {"last_perturbation_time", s.last_perturbation_time},
                  {"last_train_time", s.last_train_time},
                  {"paused_by_us", s.paused_by_us}};
  }
  return {{"draws", draws_}, {"trials", std::move(trials)}};
}

Status PopulationBasedTraining::RestoreState(const json& state) {
  trials_.clear();
  rng_.seed(seed_);
  draws_ = 0;
  ClearDelta();
  if (state.is_null()) return Status::Ok();
  try {
    for (const auto& [id, j] : state.at("trials").items()) {
      TrialState& s = trials_[id];
      if (!j.at("last_score").is_null()) s.last_score = j["last_score"].get<double>();
      s.last_perturbation_time = j.at("last_perturbation_time").get<double>();
      s.last_train_time = j.at("last_train_time").get<double>();
      s.paused_by_us = j.at("paused_by_us").get<bool>();
    }
    return Apply({{"draws", fields::GetInteger<uint64_t>(state.at("draws"))}});
  } catch (const json::exception& ex) {
    return Status::Corruption(std::string("pbt: malformed state: ") + ex.what());
  }
}

}  // namespace tunebus
