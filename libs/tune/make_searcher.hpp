// The experiment file's `search:` section and the searcher it builds (as MakeTrialScheduler does
// for `scheduler:`). docs/reference/search.md is the user's reference.
//
//   search: random                       # a name: random (default), tpe, bohb, nsga2, motpe,
//                                        # external
//   search:                              # or a map
//     type: random                       # optional, default random
//     max_concurrent: 4                  # ConcurrencyLimiter (Ray Tune 2.x), >= 1
//     points_to_evaluate: [{lr: 0.01}]   # configs tried first (partial: the rest is sampled)
//     evaluated_rewards: [0.93]          # one per point: known results, those points not run
//     warm_start: [earlier-experiment]   # finished experiments whose trials the searcher learns
//                                        # from first (tpe, bohb, external; warm_start.hpp)
//     ...                                # the searcher's own parameters (tpe, bohb, nsga2, ...)
//
// Every error reads "<param>: <what is wrong>" (points: "points_to_evaluate[<i>].<key>: ..."), so
// the spec parser points at the parameter's line, as for the trial scheduler.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libs/core/status.hpp"
#include "libs/tune/pareto.hpp"
#include "libs/tune/sample_from_resolver.hpp"
#include "libs/tune/searcher.hpp"
#include "libs/tune/searcher_link.hpp"

namespace tunebus {

/// The search types an experiment file may name.
inline constexpr const char* kSearchTypes[] = {"random",   "tpe",   "bohb",
                                               "external", "nsga2", "motpe"};

/// The `search:` section, checked for shape (not yet against the param space: MakeSearcher).
struct SearchOptions {
  std::string type = "random";
  int64_t max_concurrent = 0;                        // 0: no ConcurrencyLimiter, else >= 1
  std::vector<nlohmann::json> points_to_evaluate;    // configs (objects), in order
  std::vector<double> evaluated_rewards;             // empty, or one finite value per point
  std::vector<std::string> warm_start;               // earlier experiments' names, distinct
  nlohmann::json params = nlohmann::json::object();  // the searcher's own parameters

  /// `type` is the section's name (or its `type:`, "" for the default); `config` its other keys.
  /// Errors: InvalidArgument "type: unknown search type ...", "max_concurrent: ...",
  /// "points_to_evaluate: ...", "evaluated_rewards: ...", "warm_start: ..." (a list of
  /// experiment names; not for random, which does not learn), or "<key>: unknown parameter of the
  /// random searcher ..." (random takes none of its own).
  static Result<SearchOptions> Parse(const std::string& type, const nlohmann::json& config);
};

/// What a searcher is built for: the experiment's param space (validated), num_samples (>= 1, or
/// -1 unbounded), metric and mode (may be empty), seed, and max_concurrent_trials (the random
/// searcher's window is max(32, 2 * it)). An external searcher also gets the experiment's name,
/// a nonce for its session ids, and its link from `connect_external` (given the `search:`
/// section's endpoint, command and backoff; null: no link, as in a spec check or a read-only
/// experiment; the searcher then only holds its journaled state). An error of the factory is
/// MakeSearcher's "command: <why>" (or "endpoint: <why>" without a command).
struct SearchSetup {
  nlohmann::json param_space = nlohmann::json::object();
  int64_t num_samples = 1;
  std::string metric;
  std::string mode;
  std::vector<Objective> objectives;  // empty: one objective, metric/mode; else 2+ (the
                                      // experiment's metric/mode lists)
  uint64_t seed = 0;
  int64_t max_concurrent_trials = 0;
  std::string experiment;
  uint64_t session_nonce = 0;
  ExternalLinkFactory connect_external;
  /// The driver link's Sample, for `search: random` over a param space holding
  /// `{sample_from: driver}` (SampleFromResolver); empty: no driver (such a search finishes).
  SampleFromResolver::AskDriver ask_driver;
  /// The observations of `warm_start`'s experiments (WarmStartSource's entries, an array), read
  /// by the scheduler at submission and journaled with the experiment; null: not read (a spec
  /// check), nothing is fed.
  nlohmann::json warm_start;
};

/// The ConcurrencyLimiter's max_concurrent (0: none). A searcher other than random is limited to
/// the experiment's max_concurrent_trials (when > 0), as Ray Tune 2.x's tune.run / Tuner wrap a
/// Searcher in ConcurrencyLimiter(searcher, max_concurrent_trials): with max_concurrent_trials 1
/// a model-based searcher suggests the next trial only after the previous one ended. With both
/// set, the smaller (Ray raises an error when they differ). The random searcher's suggestions do
/// not depend on results: only its own max_concurrent limits it.
int64_t ConcurrencyLimit(const SearchOptions& options, const SearchSetup& setup);

/// Builds the searcher: the type's searcher, wrapped in WarmStart when `warm_start` names
/// experiments (fed setup.warm_start), in PointsToEvaluate when points are given
/// (they take the place of num_samples samples unless they carry rewards) and in a
/// ConcurrencyLimiter of ConcurrencyLimit(options, setup), with SetSearchProperties called.
/// Errors: InvalidArgument "<param>: <why>" (points that do not fit the param space, a type that
/// is not built into this binary, the searcher's own checks).
Result<std::unique_ptr<Searcher>> MakeSearcher(const SearchOptions& options,
                                               const SearchSetup& setup);
/// SearchOptions::Parse, then MakeSearcher.
Result<std::unique_ptr<Searcher>> MakeSearcher(const std::string& type,
                                               const nlohmann::json& config,
                                               const SearchSetup& setup);

}  // namespace tunebus
