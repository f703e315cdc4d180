#include "libs/tune/bohb_searcher.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "libs/tune/hyperband_for_bohb.hpp"
#include "libs/tune/searcher_params.hpp"

namespace tunebus {

using nlohmann::json;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
const double kLogFloor = std::log(1e-32);  // HpBandSter's max(1e-32, pdf)
}  // namespace

Result<BohbOptions> BohbOptions::Parse(const json& params) {
  SearcherParams p(params, "bohb");
  if (Status s = p.OnlyKnown({"min_points_in_model", "top_n_percent", "num_samples",
                              "random_fraction", "bandwidth_factor", "min_bandwidth", "time_attr"});
      !s.ok()) {
    return s;
  }
  BohbOptions o;
  auto min_points = p.Int("min_points_in_model", o.min_points_in_model, 0);
  auto top = p.Number("top_n_percent", o.top_n_percent, 0, /*exclusive=*/true);
  auto samples = p.Int("num_samples", o.num_samples, 1);
  auto random_fraction = p.Number("random_fraction", o.random_fraction, 0);
  auto bandwidth_factor = p.Number("bandwidth_factor", o.bandwidth_factor, 0, true);
  auto min_bandwidth = p.Number("min_bandwidth", o.min_bandwidth, 0, true);
  auto time_attr = p.String("time_attr", o.time_attr);
  for (const Status& s :
       {min_points.status(), top.status(), samples.status(), random_fraction.status(),
        bandwidth_factor.status(), min_bandwidth.status(), time_attr.status()}) {
    if (!s.ok()) return s;
  }
  if (*top >= 100)
    return SearcherParams::Error("top_n_percent", fmt::format("must be < 100, got {}", *top));
  if (*random_fraction > 1) {
    return SearcherParams::Error("random_fraction",
                                 fmt::format("must be <= 1, got {}", *random_fraction));
  }
  if (time_attr->empty()) return SearcherParams::Error("time_attr", "must not be empty");
  o.min_points_in_model = *min_points;
  o.top_n_percent = *top;
  o.num_samples = *samples;
  o.random_fraction = *random_fraction;
  o.bandwidth_factor = *bandwidth_factor;
  o.min_bandwidth = *min_bandwidth;
  o.time_attr = *time_attr;
  return o;
}

BohbSearcher::BohbSearcher(BohbOptions options, int64_t num_samples, uint64_t seed)
    : options_(std::move(options)), num_samples_(num_samples), seed_(seed) {}

Status BohbSearcher::SetSearchProperties(const std::string& metric, const std::string& mode,
                                         const json& param_space) {
  if (Status s = SearcherParams::RequireMetricAndMode("bohb", metric, mode); !s.ok()) return s;
  auto space = SearchSpace::Create(param_space, "bohb");
  if (!space.ok()) return space.status();
  metric_ = metric;
  sign_ = mode == "max" ? -1 : 1;
  space_ = std::move(*space);
  encoded_rows_ = 0;
  return Status::Ok();
}

int64_t BohbSearcher::MinPoints() const {
  const int64_t floor = int64_t(space_ ? space_->size() : 0) + 1;
  return std::max(options_.min_points_in_model, floor);
}

bool BohbSearcher::Fittable(size_t n) const {
  const size_t min_points = size_t(MinPoints());
  const size_t d = space_->size();
  if (n < min_points) return false;
  const double top = options_.top_n_percent;
  const size_t n_good = std::max(min_points, size_t(std::floor(top * double(n) / 100)));
  const size_t n_bad = std::max(min_points, size_t(std::floor((100 - top) * double(n) / 100)));
  const size_t good = std::min(n_good, n);
  const size_t bad = std::min(n_bad, n - good);
  return good > d && bad > d;
}

std::optional<double> BohbSearcher::ModelBudget() const {
  if (!space_) return std::nullopt;
  for (auto it = by_budget_.rbegin(); it != by_budget_.rend(); ++it) {
    if (Fittable(it->second.size())) return it->first;
  }
  return std::nullopt;
}

Suggestion BohbSearcher::Suggest(const std::string& trial_id) {
  if (!space_) return Suggestion::Finished();
  if (auto it = index_.find(trial_id); it != index_.end()) {
    const json& config = trials_[it->second].config;
    return Suggestion::Config(config, space_->Tag(config));
  }
  const int64_t k = suggested_;
  if (num_samples_ >= 0 && k >= num_samples_) return Suggestion::Finished();
  SearchRng rng(seed_, uint64_t(k));
  const std::optional<double> budget = ModelBudget();
  json config;
  if (!budget || rng.Uniform01() < options_.random_fraction) {
    config = space_->RandomConfig(rng.Next());
  } else {
    config = ModelConfig(rng, *budget);
  }
  std::string tag = space_->Tag(config);
  Record({{"suggest", trial_id}, {"config", config}});
  return Suggestion::Config(std::move(config), std::move(tag));
}

void BohbSearcher::OnTrialResult(const std::string& trial_id, const TrainingResult& result) {
  if (index_.count(trial_id) == 0) return;
  std::optional<double> budget;
  // HyperBandForBohb's results: its milestones are the budgets.
  if (result.Has(kHyperBandInfo)) {
    const json info = result.Value(kHyperBandInfo);
    if (info.is_object() && info.contains("budget") && info["budget"].is_number())
      budget = info["budget"].get<double>();
  } else {
    budget = result.Number(options_.time_attr);
  }
  const std::optional<double> value = result.Number(metric_);
  if (!budget || !std::isfinite(*budget) || !value) return;
  Record({{"result", trial_id},
          {"budget", *budget},
          {"value", std::isfinite(*value) ? json(*value) : json()}});
}

void BohbSearcher::OnTrialComplete(const std::string& trial_id, const TrainingResult*, bool) {
  auto it = index_.find(trial_id);
  if (it == index_.end() || !trials_[it->second].running) return;
  Record({{"complete", trial_id}});
}

Status BohbSearcher::AddEvaluatedPointAtBudget(const json& config, double value, double budget) {
  if (!space_)
    return Status::FailedPrecondition("bohb: AddEvaluatedPointAtBudget before SetSearchProperties");
  if (!std::isfinite(budget)) {
    return Status::InvalidArgument(
        fmt::format("bohb: an evaluated point needs the budget of its value, got {}", budget));
  }
  std::vector<double> row(space_->size());
  if (config.is_object()) space_->Encode(config, row.data());
  for (size_t d = 0; d < row.size(); ++d) {
    if (!config.is_object() || std::isnan(row[d])) {
      return Status::InvalidArgument(
          fmt::format("{}: the evaluated point has no value of this param in its domain: {}",
                      space_->dims()[d].name, config.dump()));
    }
  }
  Record({{"evaluated", config},
          {"budget", budget},
          {"value", std::isfinite(value) ? json(value) : json()}});
  return Status::Ok();
}

void BohbSearcher::Observe(TrialRecord* trial, double b, double v) {
  std::vector<Observation>& at_budget = by_budget_[b];
  for (const auto& [seen_budget, position] : trial->budgets) {
    if (seen_budget == b) {
      at_budget[position].value = v;
      return;
    }
  }
  trial->budgets.emplace_back(b, uint32_t(at_budget.size()));
  at_budget.push_back({uint32_t(trial - trials_.data()), v});
  ++observations_;
}

void BohbSearcher::EncodeNewTrials() {
  const size_t num_dims = space_->size();
  encoded_.resize(trials_.size() * num_dims);
  for (; encoded_rows_ < trials_.size(); ++encoded_rows_) {
    double* row = encoded_.data() + encoded_rows_ * num_dims;
    space_->Encode(trials_[encoded_rows_].config, row);
    for (size_t d = 0; d < num_dims; ++d) {
      const ParzenDim& p = space_->dims()[d].parzen;
      if (!p.categorical()) row[d] = (row[d] - p.low) / (p.high - p.low);
    }
  }
}

void BohbSearcher::FitKde(const std::vector<uint32_t>& rows, bool for_sampling,
                          ParzenEstimator* out) {
  const size_t num_dims = space_->size();
  const size_t n = rows.size();
  dims_.clear();
  for (const SearchDim& dim : space_->dims()) {
    ParzenDim p;
    p.n_choices = dim.parzen.n_choices;
    if (for_sampling) p.low = 0, p.high = 1;
    dims_.push_back(p);
  }
  out->Reset(dims_, n);
  // statsmodels' normal reference rule: 1.06 σ n^(-1/(d+4)), σ with ddof 0.
  if (!for_sampling) bandwidths_.assign(num_dims, 0.0);
  const double scale = 1.06 * std::pow(double(n), -1.0 / double(num_dims + 4));
  for (size_t d = 0; d < num_dims; ++d) {
    double* center = out->mutable_centers(d);
    double mean = 0;
    for (size_t i = 0; i < n; ++i) {
      center[i] = encoded_[size_t(rows[i]) * num_dims + d];
      mean += center[i];
    }
    mean /= double(n);
    if (!for_sampling) {
      double var = 0;
      for (size_t i = 0; i < n; ++i) var += (center[i] - mean) * (center[i] - mean);
      double bw = std::max(scale * std::sqrt(var / double(n)), options_.min_bandwidth);
      if (dims_[d].categorical()) bw = std::min(bw, 1.0);
      bandwidths_[d] = bw;
    }
    const double bw = bandwidths_[d];
    ParzenDim& p = out->dim(d);
    if (p.categorical()) {
      const double c = double(p.n_choices);
      if (for_sampling) {  // keep the row's choice with probability 1 - λ, else uniform
        p.p_hit = (1 - bw) + bw / c;
        p.p_miss = bw / c;
      } else {  // Aitchison-Aitken
        p.p_hit = p.n_choices > 1 ? 1 - bw : 1.0;
        p.p_miss = p.n_choices > 1 ? bw / (c - 1) : 0.0;
      }
      continue;
    }
    std::fill_n(out->mutable_sigmas(d), n, for_sampling ? options_.bandwidth_factor * bw : bw);
  }
  out->Finalize();
}

json BohbSearcher::ModelConfig(SearchRng& rng, double budget) {
  EncodeNewTrials();
  const size_t num_dims = space_->size();
  const std::vector<Observation>& observations = by_budget_[budget];
  ranked_.clear();
  losses_.resize(observations.size());
  for (size_t i = 0; i < observations.size(); ++i) {
    const Observation& o = observations[i];
    losses_[i] = std::isnan(o.value) ? kInf : sign_ * o.value;
    const double* row = encoded_.data() + size_t(o.trial) * num_dims;
    if (std::none_of(row, row + num_dims, [](double v) { return std::isnan(v); })) {
      ranked_.push_back(uint32_t(i));
    }
  }
  // Best first; equal losses in arrival order.
  std::stable_sort(ranked_.begin(), ranked_.end(),
                   [&](uint32_t a, uint32_t b) { return losses_[a] < losses_[b]; });
  const size_t n = ranked_.size();
  const size_t min_points = size_t(MinPoints());
  const double top = options_.top_n_percent;
  const size_t n_good =
      std::min(n, std::max(min_points, size_t(std::floor(top * double(n) / 100))));
  const size_t n_bad =
      std::min(n - n_good, std::max(min_points, size_t(std::floor((100 - top) * double(n) / 100))));
  if (n_good <= num_dims || n_bad <= num_dims) return space_->RandomConfig(rng.Next());
  good_rows_.clear();
  bad_rows_.clear();
  for (size_t r = 0; r < n_good + n_bad; ++r) {
    (r < n_good ? good_rows_ : bad_rows_).push_back(observations[ranked_[r]].trial);
  }
  FitKde(bad_rows_, false, &bad_);
  FitKde(good_rows_, false, &good_);  // leaves the good bandwidths for the proposal
  FitKde(good_rows_, true, &proposal_);

  const size_t count = size_t(options_.num_samples);
  candidates_.resize(count * num_dims);
  proposal_.Sample(rng, count, candidates_.data());
  log_l_.resize(count);
  log_g_.resize(count);
  good_.LogPdf(candidates_.data(), count, log_l_.data());
  bad_.LogPdf(candidates_.data(), count, log_g_.data());
  size_t best = 0;
  double best_score = kInf;
  for (size_t j = 0; j < count; ++j) {
    const double score = std::max(log_g_[j], kLogFloor) - std::max(log_l_[j], kLogFloor);
    if (score < best_score) best_score = score, best = j;
  }
  values_.resize(num_dims);
  for (size_t d = 0; d < num_dims; ++d) {
    const ParzenDim& p = space_->dims()[d].parzen;
    const double u = candidates_[best * num_dims + d];
    values_[d] = space_->ToValue(d, p.categorical() ? u : p.low + u * (p.high - p.low));
  }
  return space_->Config(values_.data());
}

json BohbSearcher::Describe() const {
  const std::optional<double> budget = ModelBudget();
  return {{"searcher", name()},
          {"phase", budget ? "model" : "startup"},
          {"model_budget", budget ? json(*budget) : json()},
          {"observations", observations_},
          {"running", running_}};
}

Status BohbSearcher::Apply(const json& event) {
  if (!event.is_object()) {
    return Status::Corruption("bohb: an event is an object, got " + event.dump());
  }
  auto find_trial = [&](const json& id) -> TrialRecord* {
    if (!id.is_string()) return nullptr;
    auto it = index_.find(id.get<std::string>());
    return it == index_.end() ? nullptr : &trials_[it->second];
  };
  if (auto it = event.find("suggest"); it != event.end()) {
    auto config = event.find("config");
    if (!it->is_string() || config == event.end() || !config->is_object()) {
      return Status::Corruption("bohb: bad suggest event " + event.dump());
    }
    const std::string& id = it->get_ref<const std::string&>();
    if (index_.count(id) != 0) {
      return Status::Corruption(fmt::format("bohb: trial {} suggested twice", id));
    }
    index_.emplace(id, trials_.size());
    trials_.push_back({id, *config, true, {}});
    ++running_;
    ++suggested_;
    return Status::Ok();
  }
  if (auto it = event.find("evaluated"); it != event.end()) {
    auto budget = event.find("budget");
    auto value = event.find("value");
    if (!it->is_object() || budget == event.end() || !budget->is_number() || value == event.end() ||
        !(value->is_null() || value->is_number())) {
      return Status::Corruption("bohb: bad evaluated event " + event.dump());
    }
    trials_.push_back({"", *it, false, {}});
    Observe(&trials_.back(), budget->get<double>(),
            value->is_null() ? std::numeric_limits<double>::quiet_NaN() : value->get<double>());
    return Status::Ok();
  }
  if (auto it = event.find("result"); it != event.end()) {
    TrialRecord* trial = find_trial(*it);
    auto budget = event.find("budget");
    auto value = event.find("value");
    if (trial == nullptr || budget == event.end() || !budget->is_number() || value == event.end() ||
        !(value->is_null() || value->is_number())) {
      return Status::Corruption("bohb: bad result event " + event.dump());
    }
    Observe(trial, budget->get<double>(),
            value->is_null() ? std::numeric_limits<double>::quiet_NaN() : value->get<double>());
    return Status::Ok();
  }
  if (auto it = event.find("complete"); it != event.end()) {
    TrialRecord* trial = find_trial(*it);
    if (trial == nullptr) return Status::Corruption("bohb: bad complete event " + event.dump());
    if (trial->running) --running_;
    trial->running = false;
    return Status::Ok();
  }
  return Status::Corruption("bohb: unknown event " + event.dump());
}

json BohbSearcher::SaveState() const {
  json trials = json::array();
  for (const TrialRecord& t : trials_) {
    trials.push_back({{"id", t.id}, {"config", t.config}, {"running", t.running}});
  }
  json observations = json::array();
  for (const auto& [budget, at_budget] : by_budget_) {
    for (const Observation& o : at_budget) {
      observations.push_back({o.trial, budget, std::isnan(o.value) ? json() : json(o.value)});
    }
  }
  return {{"trials", std::move(trials)}, {"observations", std::move(observations)}};
}

void BohbSearcher::Reset() {
  trials_.clear();
  index_.clear();
  by_budget_.clear();
  observations_ = running_ = suggested_ = 0;
  encoded_rows_ = 0;
}

Status BohbSearcher::RestoreState(const json& state) {
  ClearDelta();
  Reset();
  if (state.is_null()) return Status::Ok();
  auto invalid = [&](const std::string& why) {
    Reset();
    return Status::InvalidArgument("bohb state: " + why);
  };
  if (!state.is_object() || !state.contains("trials") || !state["trials"].is_array() ||
      !state.contains("observations") || !state["observations"].is_array()) {
    return invalid("expected {\"trials\": [...], \"observations\": [...]}");
  }
  // Replayed as the events that made it, so the checks are Apply's.
  for (const json& t : state["trials"]) {
    if (!t.is_object() || !t.contains("id") || !t.contains("config") ||
        !t.value("running", json()).is_boolean()) {
      return invalid("a trial needs id, config and running, got " + t.dump());
    }
    if (t["id"] == "" && t["config"].is_object() && !t["running"].get<bool>()) {
      trials_.push_back({"", t["config"], false, {}});  // an evaluated point's
      continue;
    }
    Status s = Apply({{"suggest", t["id"]}, {"config", t["config"]}});
    if (s.ok() && !t["running"].get<bool>()) s = Apply({{"complete", t["id"]}});
    if (!s.ok()) return invalid(s.message());
  }
  for (const json& o : state["observations"]) {
    if (!o.is_array() || o.size() != 3 || !o[0].is_number_unsigned() ||
        o[0].get<uint64_t>() >= trials_.size()) {
      return invalid("an observation is [trial index, budget, value], got " + o.dump());
    }
    TrialRecord& trial = trials_[o[0].get<size_t>()];
    if (!o[1].is_number() || !(o[2].is_null() || o[2].is_number())) {
      return invalid("an observation is [trial index, budget, value], got " + o.dump());
    }
    Observe(&trial, o[1].get<double>(),
            o[2].is_null() ? std::numeric_limits<double>::quiet_NaN() : o[2].get<double>());
  }
  return Status::Ok();
}

}  // namespace tunebus
