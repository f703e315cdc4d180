// VariantGenerator: Ray Tune's BasicVariantGenerator for one experiment.
//
// Expands the param space into configs: every grid_search combination, repeated num_samples
// times (outer loop over samples, inner over grid points, as Ray Tune), with each sampler drawn
// from a seeded std::mt19937_64. Generation is lazy (num_samples may be -1: unbounded).
// Samplers (Ray Tune semantics): choice [values...]; uniform [low, high]; quniform [low, high, q];
// loguniform [low, high] or [low, high, base]; qloguniform [low, high, q(, base)];
// randn [mean, sd]; qrandn [mean, sd, q]; randint [low, high) ; qrandint [low, high, q] (high
// inclusive, as Ray); lograndint [low, high(, base)); qlograndint [low, high, q(, base)] (high
// inclusive, as Ray); grid_search [values...]. Nested objects recurse; anything else is a
// constant.
//
// Conventions (the contract the spec parser, the scheduler and the journal rely on):
// - A sampler is an object with exactly one key, that key a sampler name, found as the value of
//   a config key: {"lr": {"loguniform": [1e-4, 1e-1]}}. Values of grid_search are literals.
//   A value of choice is a literal or a conditional branch: a map holding samplers (and no
//   grid_search or sample_from), as Ray Tune's tune.choice over dicts of domains and hyperopt's
//   hp.choice over sub-spaces: {"optimizer": {"choice": [{"type": "sgd", "lr": {...}},
//   {"type": "adam", "lr": {...}, "beta1": {...}}]}}. The choice's value in the config is the
//   picked branch with its samplers drawn; the other branches' samplers are not drawn. Any
//   other sampler inside a list is rejected by Validate.
// - "Param-space order" is the order nlohmann::json iterates objects: keys sorted bytewise,
//   depth first. This equals Ray, which sorts its grid variables by path.
// - Grid order: the FIRST grid axis (in param-space order) varies fastest, as Ray's
//   _grid_search_generator. E.g. {a: grid [1, 2], b: grid [x, y]} yields
//   (1,x) (2,x) (1,y) (2,y), then the next sample repeats the grid with fresh random draws.
// - Random draws happen in param-space order, once per variant, for every non-grid sampler; a
//   picked conditional branch's samplers are drawn right after its choice.
// - Ints: int samplers need JSON integer low/high/q (base may be any number) and yield
//   integers; float samplers yield doubles. randint / lograndint exclude high.
// - Quantised floats (quniform, qloguniform, qrandn): draw x, return round(x / q) * q (half
//   away from zero), clamped to [low, high]; quniform / qloguniform first narrow the range to the
//   multiples of q inside it, as Ray. qrandint picks uniformly among the multiples of q in
//   [low, high]; qlograndint draws log-uniformly in the narrowed range then rounds to q.
// - loguniform: base ** uniform(log_base(low), log_base(high)); lograndint floors that.
// - Variant.tag lists sampled and grid values as "path=value" joined by ",", in param-space
//   order, dotted paths for nested keys; doubles use "{:.4g}", strings appear raw with '/'
//   replaced by '_' (as Ray's tags), other JSON compact; a conditional branch as BranchTag
//   (variant_tag.hpp), then its samplers under the choice's path ("optimizer=adam,
//   optimizer.lr=0.001").
// - Distributions are computed from raw mt19937_64 output (not <random> distributions), so a
//   seed yields the same configs on every platform and standard library.
//
// As a Searcher (searcher.hpp) it is `search: random`, Ray Tune 2.x's BasicVariantGenerator:
// Suggest answers Next() until every variant is out, then Finished; results are ignored. Its
// suggestions do not depend on results, so it answers MaxPendingSuggestions() = a window of
// max(32, 2 * max_concurrent_trials) (Ray's _max_pending_trials) and leaves no state deltas: the
// runner journals its whole state (record searcher_state) once per batch of suggestions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "libs/core/status.hpp"
#include "libs/tune/searcher.hpp"

namespace tunebus {

struct Variant {
  nlohmann::json config;  // the resolved config (object)
  std::string tag;        // "lr=0.0012,penalty=l2": the sampled and grid values, dotted paths
};

class VariantGenerator final : public Searcher {
 public:
  /// REQUIRES: param_space validated (ParseExperimentYaml does it); num_samples >= 0 or -1 (0: a
  /// searcher with nothing to suggest, e.g. when points_to_evaluate took every sample).
  /// `max_pending`: MaxPendingSuggestions(), the runner's window of unstarted trials.
  VariantGenerator(nlohmann::json param_space, int64_t num_samples, uint64_t seed,
                   int64_t max_pending = 32);

  /// Validates a param space alone. Errors: InvalidArgument "<dotted.path>.<sampler>: <why>".
  /// `{sample_from: driver}` (a value the Python driver's tune.sample_from computes:
  /// SampleFromResolver with search: random, SearchSpace's `any` dim with search: external) is
  /// valid here; another sample_from value is an error.
  static Status Validate(const nlohmann::json& param_space);
  /// The key path of every `{sample_from: driver}` of a param space, in param-space order
  /// (empty: none). Next() leaves those placeholders in the config as they are.
  static std::vector<std::vector<std::string>> SampleFromPaths(const nlohmann::json& param_space);
  /// Validates a (partial) config against a validated param space: every key is one of the
  /// space's (nested maps recurse), a value for a sampler is in its domain (one of the values of
  /// choice / grid_search; a number, an integer for int samplers, within [low, high] — high
  /// excluded for randint and lograndint — for the range samplers; any number for randn). A
  /// value for a constant replaces it. Errors: InvalidArgument "<dotted.path>: <why>".
  static Status ValidatePoint(const nlohmann::json& param_space, const nlohmann::json& point);
  /// True if `node` is a sampler ({"<sampler name>": args}).
  static bool IsSampler(const nlohmann::json& node);
  /// True if `choice_value` (a value of a choice) is a conditional branch: it holds samplers.
  static bool IsBranch(const nlohmann::json& choice_value);
  /// Which value of a choice `value` is: the index of the first literal equal to it, or of the
  /// first conditional branch it can have been resolved from (a map whose every key is the
  /// branch's, with constants equal and sampled values in their domains; missing keys allowed);
  /// nullopt when none.
  static std::optional<size_t> BranchOf(const nlohmann::json& choices, const nlohmann::json& value);

  /// False once every variant has been produced (never false when num_samples == -1).
  bool HasNext() const;
  /// The next variant. REQUIRES: HasNext().
  Variant Next();
  /// Total variants (grid size × num_samples), or -1 when unbounded.
  int64_t Total() const override;
  /// The param space it samples (an object).
  const nlohmann::json& param_space() const { return param_space_; }
  /// How many variants Next() returned so far.
  int64_t produced() const { return produced_; }

  /// State to journal so a resumed experiment continues the same sequence:
  /// {"produced": N, "rng": "<mt19937_64 state text>"}.
  nlohmann::json SaveState() const override;
  /// Null restores the initial state (the seed's). Errors: InvalidArgument if `state` is not
  /// what SaveState returned.
  Status RestoreState(const nlohmann::json& state) override;

  // ---- Searcher ----------------------------------------------------------------------------
  const char* name() const override { return "random"; }
  /// Validates `param_space` (the one it was built with); metric and mode are not needed.
  Status SetSearchProperties(const std::string& metric, const std::string& mode,
                             const nlohmann::json& param_space) override;
  /// Next() as a config with its tag, or Finished once !HasNext().
  Suggestion Suggest(const std::string& trial_id) override;
  int64_t MaxPendingSuggestions() const override { return max_pending_; }
  int64_t suggested() const override { return produced_; }
  /// {"searcher": "random", "suggested": N, "total": T (-1: unbounded)}.
  nlohmann::json Describe() const override;

 private:
  nlohmann::json param_space_;
  int64_t num_samples_;
  uint64_t seed_;
  int64_t max_pending_;
  std::mt19937_64 rng_;
  int64_t produced_ = 0;
  // grid axes: dotted path + values, in param-space order
  std::vector<std::pair<std::vector<std::string>, nlohmann::json>> grid_axes_;
  int64_t grid_size_ = 1;
};

}  // namespace tunebus
