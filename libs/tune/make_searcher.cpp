#include "libs/tune/make_searcher.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "libs/core/near_miss.hpp"
#include "libs/tune/bohb_searcher.hpp"
#include "libs/tune/concurrency_limiter.hpp"
#include "libs/tune/external_searcher.hpp"
#include "libs/tune/motpe_searcher.hpp"
#include "libs/tune/nsga2_searcher.hpp"
#include "libs/tune/objective_rules.hpp"
#include "libs/tune/points_to_evaluate.hpp"
#include "libs/tune/sample_from_resolver.hpp"
#include "libs/tune/tpe_searcher.hpp"
#include "libs/tune/variant_generator.hpp"
#include "libs/tune/warm_start.hpp"

namespace tunebus {

using nlohmann::json;

namespace {

constexpr const char* kGenericKeys[] = {"type", "max_concurrent", "points_to_evaluate",
                                        "evaluated_rewards", "warm_start"};

bool IsGeneric(const std::string& key) {
  return std::any_of(std::begin(kGenericKeys), std::end(kGenericKeys),
                     [&](const char* k) { return key == k; });
}

// The searcher of a model-based or external type, from its own parameters.
Result<std::unique_ptr<Searcher>> MakeModelSearcher(const std::string& type, const json& params,
                                                    int64_t num_samples, const SearchSetup& setup) {
  const uint64_t seed = setup.seed;
  if (type == "nsga2") {
    auto options = Nsga2Options::Parse(params);
    if (!options.ok()) return options.status();
    return std::unique_ptr<Searcher>(
        new Nsga2Searcher(*options, setup.objectives, num_samples, seed));
  }
  if (type == "motpe") {
    auto options = MotpeOptions::Parse(params);
    if (!options.ok()) return options.status();
    return std::unique_ptr<Searcher>(
        new MotpeSearcher(*options, setup.objectives, num_samples, seed));
  }
  if (type == "tpe") {
    auto options = TpeOptions::Parse(params);
    if (!options.ok()) return options.status();
    return std::unique_ptr<Searcher>(new TpeSearcher(*options, num_samples, seed));
  }
  if (type == "bohb") {
    auto options = BohbOptions::Parse(params);
    if (!options.ok()) return options.status();
    return std::unique_ptr<Searcher>(new BohbSearcher(*options, num_samples, seed));
  }
  if (type == "external") {
    auto options = ExternalOptions::Parse(params);
    if (!options.ok()) return options.status();
    std::unique_ptr<SearcherLink> link;
    if (setup.connect_external) {
      auto made = setup.connect_external(options->Target());
      if (!made.ok()) {
        return Status::InvalidArgument(fmt::format(
            "{}: {}", options->command.empty() ? "endpoint" : "command", made.status().message()));
      }
      link = std::move(*made);
    }
    return std::unique_ptr<Searcher>(new ExternalSearcher(std::move(*options), num_samples, seed,
                                                          setup.experiment, setup.session_nonce,
                                                          std::move(link)));
  }
  return Status::InvalidArgument(fmt::format("type: unknown search type '{}'", type));
}

}  // namespace

Result<SearchOptions> SearchOptions::Parse(const std::string& type, const json& config) {
  SearchOptions o;
  o.type = type.empty() ? "random" : type;
  if (std::none_of(std::begin(kSearchTypes), std::end(kSearchTypes),
                   [&](const char* t) { return o.type == t; })) {
    std::vector<std::string> names(std::begin(kSearchTypes), std::end(kSearchTypes));
    const auto meant = NearMiss(o.type, names);
    return Status::InvalidArgument(
        fmt::format("type: unknown search type '{}'{}; expected one of {}", o.type,
                    meant ? "; did you mean " + *meant + "?" : "", fmt::join(names, ", ")));
  }
  if (!config.is_null() && !config.is_object()) {
    return Status::InvalidArgument("search: must be a search type or a map, got " + config.dump());
  }
  const json c = config.is_object() ? config : json::object();
  if (auto it = c.find("max_concurrent"); it != c.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 1) {
      return Status::InvalidArgument(
          fmt::format("max_concurrent: must be an integer >= 1, got {}", it->dump()));
    }
    o.max_concurrent = it->get<int64_t>();
  }
  if (auto it = c.find("points_to_evaluate"); it != c.end()) {
    if (!it->is_array()) {
      return Status::InvalidArgument(
          fmt::format("points_to_evaluate: must be a list of configs (maps), got {}", it->dump()));
    }
    for (size_t i = 0; i < it->size(); ++i) {
      if (!(*it)[i].is_object()) {
        return Status::InvalidArgument(
            fmt::format("points_to_evaluate[{}]: a point is a map of config keys to values, got {}",
                        i, (*it)[i].dump()));
      }
      o.points_to_evaluate.push_back((*it)[i]);
    }
  }
  if (auto it = c.find("evaluated_rewards"); it != c.end()) {
    if (!it->is_array()) {
      return Status::InvalidArgument(
          fmt::format("evaluated_rewards: must be a list of numbers, got {}", it->dump()));
    }
    for (size_t i = 0; i < it->size(); ++i) {
      const json& v = (*it)[i];
      if (!v.is_number() || !std::isfinite(v.get<double>())) {
        return Status::InvalidArgument(
            fmt::format("evaluated_rewards[{}]: must be a finite number, got {}", i, v.dump()));
      }
      o.evaluated_rewards.push_back(v.get<double>());
    }
    if (o.evaluated_rewards.size() != o.points_to_evaluate.size()) {
      return Status::InvalidArgument(fmt::format(
          "evaluated_rewards: has {} values for {} points_to_evaluate (one reward per point)",
          o.evaluated_rewards.size(), o.points_to_evaluate.size()));
    }
  }
  if (auto it = c.find("warm_start"); it != c.end()) {
    if (o.type == "random") {
      return Status::InvalidArgument(
          "warm_start: the random searcher does not learn from observations; warm start a "
          "searcher that does (type: tpe or bohb)");
    }
    if (!it->is_array()) {
      return Status::InvalidArgument(fmt::format(
          "warm_start: must be a list of names of finished experiments, got {}", it->dump()));
    }
    for (size_t i = 0; i < it->size(); ++i) {
      const json& name = (*it)[i];
      if (!name.is_string() || name.get<std::string>().empty()) {
        return Status::InvalidArgument(fmt::format(
            "warm_start[{}]: must be the name of a finished experiment, got {}", i, name.dump()));
      }
      if (std::find(o.warm_start.begin(), o.warm_start.end(), name.get<std::string>()) !=
          o.warm_start.end()) {
        return Status::InvalidArgument(
            fmt::format("warm_start[{}]: '{}' is named twice", i, name.get<std::string>()));
      }
      o.warm_start.push_back(name.get<std::string>());
    }
  }
  for (const auto& [key, value] : c.items()) {
    if (IsGeneric(key)) continue;
    if (o.type == "random") {
      return Status::InvalidArgument(fmt::format(
          "{}: unknown parameter of the random searcher (known: {})", key,
          fmt::join(std::vector<std::string>(std::begin(kGenericKeys) + 1,
                                             std::end(kGenericKeys) - 1),  // not warm_start
                    ", ")));
    }
    o.params[key] = value;
  }
  return o;
}

int64_t ConcurrencyLimit(const SearchOptions& options, const SearchSetup& setup) {
  if (options.type == "random" || setup.max_concurrent_trials <= 0) return options.max_concurrent;
  if (options.max_concurrent <= 0) return setup.max_concurrent_trials;
  return std::min(options.max_concurrent, setup.max_concurrent_trials);
}

Result<std::unique_ptr<Searcher>> MakeSearcher(const SearchOptions& options,
                                               const SearchSetup& setup) {
  if (Status s =
          CheckSearchObjectives(options.type, !options.evaluated_rewards.empty(), setup.objectives);
      !s.ok()) {
    return s;
  }
  // Points to run take the place of samples (Ray's count_variants); points with rewards do not.
  const bool runs_points = options.evaluated_rewards.empty();
  int64_t num_samples = setup.num_samples;
  if (runs_points && num_samples >= 0) {
    num_samples = std::max<int64_t>(0, num_samples - int64_t(options.points_to_evaluate.size()));
  }
  std::unique_ptr<Searcher> searcher;
  if (options.type == "random") {
    const int64_t window = std::max<int64_t>(32, 2 * setup.max_concurrent_trials);
    auto variants =
        std::make_unique<VariantGenerator>(setup.param_space, num_samples, setup.seed, window);
    if (VariantGenerator::SampleFromPaths(setup.param_space).empty()) {
      searcher = std::move(variants);
    } else {
      searcher = std::make_unique<SampleFromResolver>(std::move(variants), setup.ask_driver);
    }
  } else {
    auto made = MakeModelSearcher(options.type, options.params, num_samples, setup);
    if (!made.ok()) return made.status();
    searcher = std::move(made).value();
  }
  if (!options.warm_start.empty()) {
    searcher =
        std::make_unique<WarmStart>(std::move(searcher), options.warm_start, setup.warm_start);
  }
  if (!options.points_to_evaluate.empty()) {
    searcher = std::make_unique<PointsToEvaluate>(std::move(searcher), options.points_to_evaluate,
                                                  options.evaluated_rewards, setup.seed);
  }
  if (const int64_t limit = ConcurrencyLimit(options, setup); limit > 0) {
    searcher = std::make_unique<ConcurrencyLimiter>(std::move(searcher), limit);
  }
  if (Status s = searcher->SetSearchProperties(setup.metric, setup.mode, setup.param_space);
      !s.ok()) {
    return s;
  }
  return searcher;
}

Result<std::unique_ptr<Searcher>> MakeSearcher(const std::string& type, const json& config,
                                               const SearchSetup& setup) {
  auto options = SearchOptions::Parse(type, config);
  if (!options.ok()) return options.status();
  return MakeSearcher(*options, setup);
}

}  // namespace tunebus
