// SearchSpace: a param space as the model-based searchers (TPE, BOHB) see it: one dimension
// per sampling function, in param-space order (VariantGenerator's conventions), each with a
// value domain and model coordinates for a ParzenEstimator.
//
// Model coordinates (Optuna 3.1.0's distributions, samplers/_tpe/parzen_estimator.py):
// - uniform [low, high]: the value, bounds [low, high].
// - quniform [low, high, q]: the value, stepped by q, bounds the multiples of q in the range
//   widened by q/2 (Optuna's FloatDistribution with step); values are multiples of q.
// - loguniform [low, high(, base)]: ln(value), bounds [ln low, ln high] (the base does not
//   change the distribution).
// - qloguniform [low, high, q(, base)]: ln(value), continuous, bounds ln of the multiples of q
//   widened by q/2 (Optuna has no stepped log float; as its log int); values rounded to q.
// - randn [mean, sd] / qrandn [mean, sd, q]: the value in the window mean ± 5 sd (a draw of
//   the normal falls outside with probability 6e-7; observations outside are clamped into it),
//   qrandn stepped by q over the multiples of q in the window. TPE's prior component is
//   N(mean, sd) instead of Optuna's N(middle, width): a normal prior.
// - randint [low, high): the value, stepped by 1, bounds [low - 0.5, high - 0.5] (Optuna's
//   IntDistribution(low, high - 1)); qrandint [low, high, q]: stepped by q over the multiples
//   of q in [low, high] (high inclusive, as Ray).
// - lograndint [low, high(, base)): ln(value), bounds [ln(low - 0.5), ln(high - 0.5)], values
//   rounded (Optuna's log IntDistribution); qlograndint likewise over the multiples of q.
// - choice [values...]: the index of the choice (categorical).
// - sample_from: driver (`{sample_from: driver}`): a value the Python driver's
//   tune.sample_from function draws (proto/PROTOCOL.md section 7b); any msgpack value, no model
//   coordinate (NaN). Only the external searcher takes it: the Python driver serves its ask/tell.
// Int dims give JSON integers (exact up to 2^53), float dims doubles, choices their literal.
// Constants (anything that is not a sampler) pass through into every config.
//
// Conditional spaces (a choice over maps holding samplers, VariantGenerator's conditional
// branches): each branch's samplers are dims whose `parent` is the choice's dim and `branch`
// the index of their map in it; such a dim is active in a config when its parent is and picked
// that branch, and has a model coordinate (Encode) only then. The dims are ordered by group
// (SearchGroup): first every unconditional dim in param-space order, then each branch's own
// dims, branches in param-space order (a parent's group before its branches'), so a group is a
// range of dims and a parent comes before its children. In a space without conditional
// branches that is param-space order and there is one group.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libs/core/status.hpp"
#include "libs/tune/parzen_estimator.hpp"

namespace tunebus {

/// One sampled parameter.
struct SearchDim {
  // kAny: sample_from (the Python driver's value, any JSON).
  enum class Kind { kFloat, kInt, kCategorical, kAny };
  std::vector<std::string> keys;  // its key path in the config
  std::string name;               // the dotted path: "model.lr"
  std::string sampler;            // "loguniform", "choice", ...
  Kind kind = Kind::kFloat;
  bool log = false;  // model coordinate is ln(value)
  // The values it takes: [value_low, value_high], multiples of `quantum` when it is > 0
  // (ints: quantum >= 1). Not used for choices.
  double value_low = 0, value_high = 0, quantum = 0;
  double low = 0, high = 0;  // the sampler's own low/high (quantised values are clamped to it)
  nlohmann::json choices;    // kCategorical: the literals
  ParzenDim parzen;          // model coordinates: bounds, step, n_choices
  TpePrior prior;            // TPE's prior component (model coordinates)
  // Conditional dims: the dim of the choice whose branch holds it and that branch's index;
  // -1 / -1 for an unconditional dim.
  int32_t parent = -1;
  int32_t branch = -1;
};

/// A range of dims that appear together: the unconditional ones (group 0, parent -1), or one
/// conditional branch's own dims (Optuna's group decomposition, `group=True`, over a declared
/// space instead of the trials' parameter sets).
struct SearchGroup {
  size_t begin = 0, count = 0;  // dims [begin, begin + count)
  int32_t parent = -1, branch = -1;
};

class SearchSpace {
 public:
  /// The dims of a param space for searcher `searcher` ("tpe", "bohb": used in messages).
  /// Errors: InvalidArgument "param_space.<path>: grid_search cannot be combined with search:
  /// <searcher>; use search: random", "param_space.<path>: sample_from needs the Python driver,
  /// which serves search itself ..." for a searcher other than "external", or
  /// VariantGenerator::Validate's error prefixed with "param_space.".
  static Result<SearchSpace> Create(const nlohmann::json& param_space, const std::string& searcher);

  const std::vector<SearchDim>& dims() const { return dims_; }
  size_t size() const { return dims_.size(); }
  /// The groups in dim order; one (all dims) unless the space has conditional branches.
  const std::vector<SearchGroup>& groups() const { return groups_; }
  /// True when the space has conditional branches (more than one group).
  bool conditional() const { return groups_.size() > 1; }
  /// True when dim d is active in the config whose model coordinates (Encode) or values
  /// (ToValue) are `row`: it is unconditional, or its parent's coordinate is its branch (an
  /// inactive parent's is NaN).
  bool Active(const double* row, size_t d) const {
    const SearchDim& dim = dims_[d];
    return dim.parent < 0 || row[dim.parent] == double(dim.branch);
  }
  const nlohmann::json& param_space() const { return param_space_; }

  /// The model coordinate of every dim's value in `config` into out[0, size()): clamped into
  /// the dim's bounds; NaN where the dim is inactive (a branch its choice did not pick), the
  /// value is missing, not a number, not positive on a log dim, or (categorical) none of the
  /// choices (VariantGenerator::BranchOf).
  void Encode(const nlohmann::json& config, double* out) const;
  /// The value of dim d nearest model coordinate t: exp on log dims, rounded to the quantum,
  /// clamped to the domain; a choice index for a categorical dim.
  double ToValue(size_t d, double t) const;
  /// Value v of numeric dim d made one of its values: clamped to the domain, rounded to the
  /// quantum.
  double Snap(size_t d, double v) const;
  /// The model coordinate of value v of dim d (ln on log dims, the index for choices).
  double ToModel(size_t d, double v) const;
  /// The config whose dim d has value values[d] (ToValue's units) and every constant of the
  /// param space; kAny dims are null there (SetValue fills them). A choice's value is its
  /// picked branch, filled; values of inactive dims are not read (NaN is fine).
  nlohmann::json Config(const double* values) const;
  /// Sets dim d's value in `config` (by its key path) to `value`, as is.
  void SetValue(nlohmann::json& config, size_t d, nlohmann::json value) const;
  /// The value of dim d in `config` (found by its key path), or nullptr when it has none.
  const nlohmann::json* Value(const nlohmann::json& config, size_t d) const;
  /// Variant.tag's form for `config`: "path=value" per active dim in param-space order joined
  /// by ",", doubles "{:.4g}", strings raw with '/' replaced by '_', other JSON compact, a
  /// conditional branch as BranchTag (variant_tag.hpp).
  std::string Tag(const nlohmann::json& config) const;
  /// A config drawn as the variant generator draws it (Ray Tune's sampling functions).
  nlohmann::json RandomConfig(uint64_t seed) const;

 private:
  // `node` with its samplers replaced by values[d] (Config); a branch a choice did not pick
  // is walked with emit false, which only advances `walk`.
  nlohmann::json Fill(const nlohmann::json& node, bool top, size_t& walk, const double* values,
                      bool emit) const;

  nlohmann::json param_space_;
  std::vector<SearchDim> dims_;
  std::vector<SearchGroup> groups_;
  std::vector<size_t> walk_order_;  // dims_ indices in param-space (walk) order
};

}  // namespace tunebus
