#include "libs/tune/tpe_searcher.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "libs/tune/searcher_params.hpp"

namespace tunebus {

using nlohmann::json;

Result<TpeOptions> TpeOptions::Parse(const json& params) {
  SearcherParams p(params, "tpe");
  if (Status s = p.OnlyKnown(
          {"n_startup_trials", "n_ei_candidates", "consider_prior", "prior_weight",
           "consider_magic_clip", "consider_endpoints", "multivariate", "group", "bandwidth",
           "constant_liar", "normalized_density", "gamma_strategy", "gamma_beta", "weight_strategy",
           "min_bandwidth_factor", "b_magic_exponent", "multivariate_parallel", "liar_kernel"});
      !s.ok()) {
    return s;
  }
  TpeOptions o;
  auto startup = p.Int("n_startup_trials", o.n_startup_trials, 0);
  auto candidates = p.Int("n_ei_candidates", o.n_ei_candidates, 1);
  auto consider_prior = p.Bool("consider_prior", o.consider_prior);
  auto prior_weight = p.Number("prior_weight", o.prior_weight, 0, /*exclusive=*/true);
  auto magic_clip = p.Bool("consider_magic_clip", o.consider_magic_clip);
  auto endpoints = p.Bool("consider_endpoints", o.consider_endpoints);
  auto multivariate = p.Bool("multivariate", o.multivariate);
  auto group = p.Bool("group", o.group);
  auto bandwidth = p.String("bandwidth", "hyperopt", {"scott", "hyperopt"});
  auto liar = p.Bool("constant_liar", o.constant_liar);
  auto liar_kernel =
      p.String("liar_kernel", "observation", {"observation", "source_widths", "source"});
  auto multivariate_parallel = p.Bool("multivariate_parallel", o.multivariate_parallel);
  auto normalized = p.Bool("normalized_density", o.normalized_density);
  auto gamma = p.String("gamma_strategy", "linear", {"linear", "sqrt"});
  auto beta = p.Number("gamma_beta", o.gamma_beta, 0, /*exclusive=*/true);
  auto weights = p.String("weight_strategy", "EI", {"old-decay", "uniform", "EI"});
  auto min_bandwidth = p.Number("min_bandwidth_factor", o.min_bandwidth_factor, 0, true);
  auto exponent = p.Number("b_magic_exponent", o.b_magic_exponent, 0, true);
  for (const Status& s :
       {startup.status(), candidates.status(), consider_prior.status(), prior_weight.status(),
        magic_clip.status(), endpoints.status(), multivariate.status(), group.status(),
        bandwidth.status(), liar.status(), normalized.status(), gamma.status(), beta.status(),
        weights.status(), min_bandwidth.status(), exponent.status(), multivariate_parallel.status(),
        liar_kernel.status()}) {
    if (!s.ok()) return s;
  }
  if (*min_bandwidth > 1) {
    return SearcherParams::Error(
        "min_bandwidth_factor", fmt::format("must be <= 1 (of the range), got {}", *min_bandwidth));
  }
  if (*group && !*multivariate) {
    return SearcherParams::Error("group", "needs multivariate: true (as Optuna's TPESampler)");
  }
  if (*bandwidth == "scott" && !*multivariate) {
    return SearcherParams::Error(
        "bandwidth", "scott needs multivariate: true (univariate TPE uses hyperopt's widths)");
  }
  o.n_startup_trials = *startup;
  o.n_ei_candidates = *candidates;
  o.consider_prior = *consider_prior;
  o.prior_weight = *prior_weight;
  o.consider_magic_clip = *magic_clip;
  o.consider_endpoints = *endpoints;
  o.multivariate = *multivariate;
  o.group = *group;
  o.bandwidth = *bandwidth == "hyperopt" ? TpeBandwidth::kHyperopt : TpeBandwidth::kScott;
  o.constant_liar = *liar;
  o.liar_kernel = *liar_kernel == "observation"     ? TpeLiarKernel::kObservation
                  : *liar_kernel == "source_widths" ? TpeLiarKernel::kSourceWidths
                                                    : TpeLiarKernel::kSource;
  o.normalized_density = *normalized;
  o.gamma_strategy = *gamma == "sqrt" ? TpeGamma::kSqrt : TpeGamma::kLinear;
  o.gamma_beta = *beta;
  o.weight_strategy = *weights == "uniform" ? TpeWeights::kUniform
                      : *weights == "EI"    ? TpeWeights::kExpectedImprovement
                                            : TpeWeights::kOldDecay;
  o.min_bandwidth_factor = *min_bandwidth;
  o.b_magic_exponent = *exponent;
  o.multivariate_parallel = *multivariate_parallel;
  return o;
}

int64_t TpeDefaultGamma(int64_t n) {
  return std::min(int64_t(std::ceil(0.1 * double(n))), int64_t{25});
}

int64_t TpeGammaOf(TpeGamma strategy, double beta, int64_t n) {
  if (strategy == TpeGamma::kLinear && beta == 0.1) return std::min(TpeDefaultGamma(n), n);
  const double x = strategy == TpeGamma::kSqrt ? std::sqrt(double(n)) : double(n);
  return std::min({int64_t(std::ceil(beta * x)), int64_t{25}, n});
}

TpeSearcher::TpeSearcher(TpeOptions options, int64_t num_samples, uint64_t seed)
    : options_(options), num_samples_(num_samples), seed_(seed) {}

Status TpeSearcher::SetSearchProperties(const std::string& metric, const std::string& mode,
                                        const json& param_space) {
  if (Status s = SearcherParams::RequireMetricAndMode("tpe", metric, mode); !s.ok()) return s;
  auto space = SearchSpace::Create(param_space, "tpe");
  if (!space.ok()) return space.status();
  metric_ = metric;
  sign_ = mode == "max" ? -1 : 1;
  space_ = std::move(*space);
  parzen_dims_.clear();
  priors_.clear();
  for (const SearchDim& dim : space_->dims()) {
    parzen_dims_.push_back(dim.parzen);
    priors_.push_back(dim.prior);
  }
  encoded_rows_ = 0;
  return Status::Ok();
}

Suggestion TpeSearcher::Suggest(const std::string& trial_id) {
  if (!space_) return Suggestion::Finished();
  if (trial_id.empty()) return Suggestion::NotNow();  // "" marks evaluated points
  if (auto it = index_.find(trial_id); it != index_.end()) {
    const json& config = trials_[it->second].config;
    return Suggestion::Config(config, space_->Tag(config));
  }
  const int64_t k = suggested_;
  if (num_samples_ >= 0 && k >= num_samples_) return Suggestion::Finished();
  SearchRng rng(seed_, uint64_t(k));
  json config =
      complete_ < options_.n_startup_trials ? space_->RandomConfig(rng.Next()) : ModelConfig(rng);
  std::string tag = space_->Tag(config);
  Record({{"suggest", trial_id}, {"config", config}});
  return Suggestion::Config(std::move(config), std::move(tag));
}

void TpeSearcher::OnTrialComplete(const std::string& trial_id, const TrainingResult* last_result,
                                  bool error) {
  auto it = index_.find(trial_id);
  if (it == index_.end() || states_[it->second] != TrialState::kRunning) return;
  json value = nullptr;
  if (!error && last_result != nullptr) {
    std::optional<double> v = last_result->Number(metric_);
    if (v && std::isfinite(*v)) value = *v;
  }
  Record({{"complete", trial_id}, {"value", value}});
}

Status TpeSearcher::AddEvaluatedPoint(const json& config, double value) {
  if (!space_)
    return Status::FailedPrecondition("tpe: AddEvaluatedPoint before SetSearchProperties");
  if (!std::isfinite(value)) return Status::Ok();
  std::vector<double> row(space_->size());
  if (config.is_object()) space_->Encode(config, row.data());
  for (size_t d = 0; d < row.size(); ++d) {
    if (!config.is_object() || (space_->Active(row.data(), d) && std::isnan(row[d]))) {
      return Status::InvalidArgument(
          fmt::format("{}: the evaluated point has no value of this param in its domain: {}",
                      space_->dims()[d].name, config.dump()));
    }
  }
  Record({{"evaluated", config}, {"value", value}});
  return Status::Ok();
}

void TpeSearcher::EncodeNewTrials() {
  const size_t num_dims = space_->size();
  if (encoded_rows_ == 0) {
    // The first encoding (after a restore: of every trial so far) makes room for as many
    // trials again, so the per-trial buffers do not grow, and fault in fresh pages, over the
    // next suggestions but in this already long one.
    const size_t room = 2 * trials_.size() + 16;
    // Kept whenever a fit takes each kernel's own widths: univariate suggestions (also
    // multivariate_parallel false while trials run) and joint ones with hyperopt's widths.
    const bool neighbour_widths = !options_.multivariate || !options_.multivariate_parallel ||
                                  options_.bandwidth == TpeBandwidth::kHyperopt;
    sorted_.assign(neighbour_widths ? num_dims : 0, {});
    for (auto& sorted : sorted_) sorted.reserve(room);
    trials_.reserve(room);
    states_.reserve(room);
    values_.reserve(room);
    encoded_.reserve(room * num_dims);
  }
  encoded_.resize(trials_.size() * num_dims);
  for (; encoded_rows_ < trials_.size(); ++encoded_rows_) {
    double* row = encoded_.data() + encoded_rows_ * num_dims;
    space_->Encode(trials_[encoded_rows_].config, row);
    for (size_t d = 0; d < sorted_.size(); ++d) {
      if (std::isnan(row[d]) || space_->dims()[d].parzen.categorical()) continue;
      // The newest trial goes after the equal values: ties stay in age order.
      const std::pair<double, uint32_t> entry(row[d], uint32_t(encoded_rows_));
      sorted_[d].insert(std::upper_bound(sorted_[d].begin(), sorted_[d].end(), entry), entry);
    }
  }
}

json TpeSearcher::ModelConfig(SearchRng& rng) {
  EncodeNewTrials();
  // Split the completed observations: the best gamma(n) by loss are below (Optuna's
  // _split_observation_pairs, a stable sort); the rest and, with the constant liar, the
  // running trials are above. Both keep chronological order.
  // (loss, index) pairs order equal losses by age, as the stable sort; only the best gamma(n)
  // need to be found.
  ranked_.clear();
  for (size_t i = 0; i < trials_.size(); ++i) {
    if (states_[i] == TrialState::kComplete) ranked_.emplace_back(sign_ * values_[i], uint32_t(i));
  }
  const size_t n_below =
      size_t(TpeGammaOf(options_.gamma_strategy, options_.gamma_beta, int64_t(ranked_.size())));
  std::nth_element(ranked_.begin(), ranked_.begin() + ptrdiff_t(n_below), ranked_.end());
  is_below_.assign(trials_.size(), 0);
  for (size_t r = 0; r < n_below; ++r) is_below_[ranked_[r].second] = 1;
  // EI weighting's threshold: the best loss above (nth_element put it right after the below).
  const double threshold =
      n_below < ranked_.size()
          ? std::min_element(ranked_.begin() + ptrdiff_t(n_below), ranked_.end())->first
          : std::numeric_limits<double>::infinity();
  below_rows_.clear();
  above_rows_.clear();
  below_row_weights_.clear();
  above_row_weights_.clear();
  const bool ei = options_.weight_strategy == TpeWeights::kExpectedImprovement;
  for (size_t i = 0; i < trials_.size(); ++i) {
    const TrialState state = states_[i];
    if (is_below_[i]) {
      below_rows_.push_back(uint32_t(i));
      below_row_weights_.push_back(
          ei && std::isfinite(threshold) ? std::max(1e-12, threshold - sign_ * values_[i]) : 1.0);
    } else if (state == TrialState::kComplete ||
               (state == TrialState::kRunning && options_.constant_liar)) {
      above_rows_.push_back(uint32_t(i));
      above_row_weights_.push_back(1.0);
    }
  }
  // NaN: an inactive dim (a branch its choice did not pick), never chosen.
  chosen_.assign(space_->size(), std::numeric_limits<double>::quiet_NaN());
  // Joint unless the options say univariate, or other trials run and multivariate_parallel is
  // false (see TpeOptions). A joint model is one per group (the unconditional dims, then each
  // picked branch's, fitted to the trials that picked it); a univariate one per active dim.
  joint_ = options_.multivariate && (running_ == 0 || options_.multivariate_parallel);
  below_.resize(std::max(below_.size(), space_->size()));
  above_.resize(std::max(above_.size(), space_->size()));
  if (joint_) {
    for (const SearchGroup& group : space_->groups()) {
      if (space_->Active(chosen_.data(), group.begin)) ChooseDims(rng, group.begin, group.count);
    }
  } else {
    for (size_t d = 0; d < space_->size(); ++d) {
      if (space_->Active(chosen_.data(), d)) ChooseDims(rng, d, 1);
    }
  }
  return space_->Config(chosen_.data());
}

void TpeSearcher::ChooseDims(SearchRng& rng, size_t d, size_t count) {
  const TpeEstimatorOptions estimator_options{options_.consider_prior,
                                              options_.prior_weight,
                                              options_.consider_magic_clip,
                                              options_.consider_endpoints,
                                              joint_,
                                              options_.bandwidth,
                                              options_.normalized_density,
                                              options_.min_bandwidth_factor,
                                              options_.b_magic_exponent};
  const bool weighted = options_.weight_strategy != TpeWeights::kOldDecay;
  const std::span<const ParzenDim> dims(parzen_dims_.data() + d, count);
  const std::span<const TpePrior> priors(priors_.data() + d, count);
  // Joint fits with Scott's widths sort nothing; a univariate fit of a categorical dim neither.
  const bool presorted = d + count <= sorted_.size() &&
                         !(joint_ && options_.bandwidth == TpeBandwidth::kScott) &&
                         !(count == 1 && parzen_dims_[d].categorical());
  if (presorted) slot_.assign(trials_.size(), -1);
  const size_t n_below =
      GatherObservations(below_rows_, d, count, presorted, &below_obs_,
                         weighted ? &below_row_weights_ : nullptr, &below_weights_);
  const size_t n_above =
      GatherObservations(above_rows_, d, count, presorted, &above_obs_,
                         weighted ? &above_row_weights_ : nullptr, &above_weights_, &above_kept_);
  // Both sides' observations by ascending value in each dim, dim after dim: sorted_[d + k]
  // filtered (slot_ tells the side's row; the sides have no trial in common). A categorical
  // dim's part is its rows in order (FitTpeEstimator does not read it).
  below_sorted_.clear();
  above_sorted_.clear();
  if (presorted) {
    for (size_t k = 0; k < count; ++k) {
      if (parzen_dims_[d + k].categorical()) {
        for (size_t i = 0; i < n_below; ++i) below_sorted_.push_back(uint32_t(i));
        for (size_t i = 0; i < n_above; ++i) above_sorted_.push_back(uint32_t(i));
        continue;
      }
      for (const auto& [value, row] : sorted_[d + k]) {
        if (slot_[row] < 0) continue;
        (is_below_[row] ? below_sorted_ : above_sorted_).push_back(uint32_t(slot_[row]));
      }
    }
  }
  ParzenEstimator& below = below_[d];
  ParzenEstimator& above = above_[d];
  FitTpeEstimator(dims, priors, below_obs_.data(), n_below, estimator_options, &below,
                  below_sorted_, weighted ? below_weights_.data() : nullptr);
  FitTpeEstimator(dims, priors, above_obs_.data(), n_above, estimator_options, &above,
                  above_sorted_, weighted ? above_weights_.data() : nullptr);
  if (joint_ && count >= 2 && running_ > 0 && options_.constant_liar &&
      options_.liar_kernel != TpeLiarKernel::kObservation) {
    ShapeLies(below, &above, d, count);
  }

  // Candidates from l(x), snapped to values the params take (Optuna samples, rounds, then
  // evaluates both densities at the rounded point); the best log l - log g wins (first of
  // equals, as numpy.argmax).
  const size_t n_candidates = size_t(options_.n_ei_candidates);
  candidates_.resize(n_candidates * count);
  below.Sample(rng, n_candidates, candidates_.data());
  candidate_values_.resize(n_candidates * count);
  for (size_t j = 0; j < n_candidates; ++j) {
    for (size_t k = 0; k < count; ++k) {
      const double value = space_->ToValue(d + k, candidates_[j * count + k]);
      candidate_values_[j * count + k] = value;
      candidates_[j * count + k] = space_->ToModel(d + k, value);
    }
  }
  log_l_.resize(n_candidates);
  log_g_.resize(n_candidates);
  below.LogPdf(candidates_.data(), n_candidates, log_l_.data());
  above.LogPdf(candidates_.data(), n_candidates, log_g_.data());
  size_t best = 0;
  double best_score = -std::numeric_limits<double>::infinity();
  for (size_t j = 0; j < n_candidates; ++j) {
    const double score = log_l_[j] - log_g_[j];
    if (score > best_score) best_score = score, best = j;
  }
  std::copy_n(candidate_values_.data() + best * count, count, chosen_.data() + d);
}

void TpeSearcher::ShapeLies(const ParzenEstimator& below, ParzenEstimator* above, size_t d,
                            size_t count) {
  // above's components: its observations (above_kept_ tells each one's trial), then the prior.
  const std::span<const double> g_weights = above->weights();
  double lie_mass = 0;
  for (size_t i = 0; i < above_kept_.size(); ++i) {
    if (states_[above_kept_[i]] == TrialState::kRunning) lie_mass += g_weights[i];
  }
  if (lie_mass == 0) return;
  const bool prior_component = options_.consider_prior;  // l(x)'s last (below has n >= 1)
  // Weights relative to g's other components: Finalize normalises them again.
  const double other_mass = 1 - lie_mass;
  double* weights = above->mutable_weights();
  for (size_t i = 0; i < above_kept_.size(); ++i) {
    if (states_[above_kept_[i]] != TrialState::kRunning) continue;
    const size_t source = below.MostLikelyComponent(above_obs_.data() + i * count);
    // A trial l(x)'s prior explains best (the startup's random configs, mostly) came from no
    // good observation's region: it keeps its own kernel.
    if (prior_component && source + 1 == below.size()) continue;
    for (size_t k = 0; k < count; ++k) {
      if (parzen_dims_[d + k].categorical()) continue;
      double& sigma = above->mutable_sigmas(k)[i];
      sigma = std::max(sigma, below.sigmas(k)[source]);
    }
    if (options_.liar_kernel == TpeLiarKernel::kSource) {
      weights[i] = below.weights()[source] * other_mass;
    }
  }
  above->Finalize();
}

size_t TpeSearcher::GatherObservations(const std::vector<uint32_t>& rows, size_t d, size_t count,
                                       bool slots, std::vector<double>* out,
                                       const std::vector<double>* row_weights,
                                       std::vector<double>* weights_out,
                                       std::vector<uint32_t>* kept) {
  const size_t num_dims = space_->size();
  out->resize(rows.size() * count);
  weights_out->resize(rows.size());
  if (kept != nullptr) kept->clear();
  size_t n = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    const uint32_t row = rows[r];
    const double* x = encoded_.data() + size_t(row) * num_dims + d;
    bool missing = false;
    for (size_t k = 0; k < count; ++k) missing |= std::isnan(x[k]);
    if (missing) continue;
    std::copy_n(x, count, out->data() + n * count);
    if (row_weights != nullptr) (*weights_out)[n] = (*row_weights)[r];
    if (slots) slot_[row] = int32_t(n);
    if (kept != nullptr) kept->push_back(row);
    ++n;
  }
  return n;
}

json TpeSearcher::Describe() const {
  return {{"searcher", name()},
          {"phase", complete_ < options_.n_startup_trials ? "startup" : "model"},
          {"observations", complete_},
          {"running", running_}};
}

Status TpeSearcher::Apply(const json& event) {
  if (!event.is_object())
    return Status::Corruption("tpe: an event is an object, got " + event.dump());
  if (auto it = event.find("suggest"); it != event.end()) {
    auto config = event.find("config");
    if (!it->is_string() || config == event.end() || !config->is_object()) {
      return Status::Corruption("tpe: bad suggest event " + event.dump());
    }
    const std::string& id = it->get_ref<const std::string&>();
    if (id.empty() || index_.count(id) != 0) {
      return Status::Corruption(fmt::format("tpe: trial '{}' suggested twice or unnamed", id));
    }
    index_.emplace(id, trials_.size());
    trials_.push_back({id, *config});
    states_.push_back(TrialState::kRunning);
    values_.push_back(0);
    ++running_;
    ++suggested_;
    return Status::Ok();
  }
  if (auto it = event.find("evaluated"); it != event.end()) {
    auto value = event.find("value");
    if (!it->is_object() || value == event.end() || !value->is_number()) {
      return Status::Corruption("tpe: bad evaluated event " + event.dump());
    }
    trials_.push_back({"", *it});  // no trial id: never suggested, never completed again
    states_.push_back(TrialState::kComplete);
    values_.push_back(value->get<double>());
    ++complete_;
    return Status::Ok();
  }
  if (auto it = event.find("complete"); it != event.end()) {
    auto value = event.find("value");
    if (!it->is_string() || value == event.end() || !(value->is_null() || value->is_number())) {
      return Status::Corruption("tpe: bad complete event " + event.dump());
    }
    auto trial = index_.find(it->get<std::string>());
    if (trial == index_.end()) {
      return Status::Corruption("tpe: complete event for a trial never suggested: " + event.dump());
    }
    TrialState& state = states_[trial->second];
    if (state == TrialState::kRunning) --running_;
    if (state == TrialState::kComplete) --complete_;
    if (value->is_number()) {
      state = TrialState::kComplete;
      values_[trial->second] = value->get<double>();
      ++complete_;
    } else {
      state = TrialState::kDropped;
    }
    return Status::Ok();
  }
  return Status::Corruption("tpe: unknown event " + event.dump());
}

json TpeSearcher::SaveState() const {
  json trials = json::array();
  for (size_t i = 0; i < trials_.size(); ++i) {
    const TrialState st = states_[i];
    const char* state = st == TrialState::kRunning    ? "running"
                        : st == TrialState::kComplete ? "complete"
                                                      : "dropped";
    trials.push_back({{"id", trials_[i].id},
                      {"config", trials_[i].config},
                      {"state", state},
                      {"value", st == TrialState::kComplete ? json(values_[i]) : json()}});
  }
  return {{"trials", std::move(trials)}};
}

void TpeSearcher::Reset() {
  trials_.clear();
  states_.clear();
  values_.clear();
  index_.clear();
  suggested_ = complete_ = running_ = 0;
  encoded_rows_ = 0;
}

Status TpeSearcher::RestoreState(const json& state) {
  ClearDelta();
  Reset();
  if (state.is_null()) return Status::Ok();
  auto invalid = [&](const std::string& why) {
    Reset();
    return Status::InvalidArgument("tpe state: " + why);
  };
  if (!state.is_object() || !state.contains("trials") || !state["trials"].is_array()) {
    return invalid("expected {\"trials\": [...]}");
  }
  for (const json& t : state["trials"]) {
    if (!t.is_object() || !t.contains("id") || !t.contains("config") || !t.contains("state")) {
      return invalid("a trial needs id, config and state, got " + t.dump());
    }
    const json& st = t["state"];
    // Replayed as the events that made it, so the checks are Apply's.
    if (t["id"] == "") {  // an evaluated point
      Status s = Apply({{"evaluated", t["config"]}, {"value", t.value("value", json())}});
      if (!s.ok()) return invalid(s.message());
      continue;
    }
    Status s = Apply({{"suggest", t["id"]}, {"config", t["config"]}});
    if (s.ok() && st != "running") {
      if (st != "complete" && st != "dropped") return invalid("unknown state " + st.dump());
      s = Apply(
          {{"complete", t["id"]}, {"value", st == "complete" ? t.value("value", json()) : json()}});
    }
    if (!s.ok()) return invalid(s.message());
  }
  return Status::Ok();
}

}  // namespace tunebus
