// SampleFromResolver: `search: random` over a param space holding `tune.sample_from`: Ray Tune
// 2.x's BasicVariantGenerator, whose variants resolve their sample_from functions in the driver
// (ray.tune.search.variant_generator's _resolve_domain_vars, called with the `spec` whose
// `config` is the variant drawn so far).
//
// It wraps the VariantGenerator that draws every grid point and random domain (its
// `{sample_from: driver}` placeholders left as they are) and, before a variant becomes a trial,
// asks the Python driver for the values of its sample_from keys (DriverLink::Sample,
// proto/PROTOCOL.md section 7b `driver_sample`). One variant is out at a time: Suggest answers
// NotNow while the driver computes, then the filled config (the runner journals it in the
// trial_added record, so a resumed experiment never asks again for a trial that exists).
//
// States: kIdle (no variant out) -> kAsking (a variant drawn, the driver asked) -> kAnswered (its
// values came; the next Suggest returns it) -> kIdle. An `error` answer (the driver's function
// raised) or no driver at all -> kFailed: Suggest answers Finished from then on (the running
// trials finish, as Ray's search stops; Describe says why).
//
// Journaling: SaveState is the generator's state before the variant that is out, so a resume
// draws that variant again and asks the driver again (its sample_from values were never
// journaled). No deltas.
//
// Threading: one thread calls everything and receives the driver's answer (the scheduler's loop).
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libs/tune/driver_link.hpp"
#include "libs/tune/searcher.hpp"
#include "libs/tune/variant_generator.hpp"

namespace tunebus {

class SampleFromResolver final : public Searcher {
 public:
  enum class State { kIdle, kAsking, kAnswered, kFailed };
  static const char* StateName(State s);

  /// Asks the driver the values at `paths` of new trial `trial_id`'s `config`, calling `done`
  /// once with them (DriverLink::Sample's contract); may call `done` before it returns.
  using AskDriver =
      std::function<void(const std::string& trial_id, nlohmann::json config,
                         std::vector<DriverLink::KeyPath> paths, DriverLink::SampleCallback done)>;

  /// `variants`: the random searcher of a param space with sample_from keys; `ask`: the driver
  /// link, empty where there is none (a read-only experiment, a spec check: Suggest finishes).
  /// REQUIRES: variants != nullptr.
  SampleFromResolver(std::unique_ptr<VariantGenerator> variants, AskDriver ask);

  const char* name() const override { return "random"; }
  Status SetSearchProperties(const std::string& metric, const std::string& mode,
                             const nlohmann::json& param_space) override;
  /// The answered variant with its sample_from values at their paths (and "path=value" in its
  /// tag); NotNow while the driver computes; Finished when every variant is out or after kFailed.
  Suggestion Suggest(const std::string& trial_id) override;
  int64_t MaxPendingSuggestions() const override { return variants_->MaxPendingSuggestions(); }
  int64_t Total() const override { return variants_->Total(); }
  /// Variants returned by Suggest (one drawn and not returned not counted).
  int64_t suggested() const override;
  /// The generator's Describe plus "sample_from": the state's name, and "error" after kFailed.
  nlohmann::json Describe() const override;

  nlohmann::json SaveState() const override;
  /// Restores the generator; a variant that was out is dropped (drawn again next).
  Status RestoreState(const nlohmann::json& state) override;

  State state() const { return state_; }

 private:
  void OnSamples(DriverSamples samples);

  std::unique_ptr<VariantGenerator> variants_;
  AskDriver ask_;
  std::vector<DriverLink::KeyPath> paths_;  // the sample_from keys, param-space order
  State state_ = State::kIdle;
  // A variant was drawn and not suggested: kAsking, kAnswered, and kFailed after the driver's
  // error.
  bool variant_out_ = false;
  Variant out_;                      // while variant_out_: the variant asked about
  nlohmann::json state_before_out_;  // the generator's state before out_ was drawn
  std::string error_;                // kFailed: why
};

}  // namespace tunebus
