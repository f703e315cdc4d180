#include "libs/tune/sample_from_resolver.hpp"

#include <fmt/format.h>

#include "libs/core/enum_names.hpp"
#include "libs/tune/variant_tag.hpp"

namespace tunebus {

using nlohmann::json;

namespace {

constexpr EnumName<SampleFromResolver::State> kResolverStates[] = {
    {SampleFromResolver::State::kIdle, "idle"},
    {SampleFromResolver::State::kAsking, "asking"},
    {SampleFromResolver::State::kAnswered, "answered"},
    {SampleFromResolver::State::kFailed, "failed"},
};

}  // namespace

const char* SampleFromResolver::StateName(State s) { return NameIn(kResolverStates, s); }

SampleFromResolver::SampleFromResolver(std::unique_ptr<VariantGenerator> variants, AskDriver ask)
    : variants_(std::move(variants)),
      ask_(std::move(ask)),
      paths_(VariantGenerator::SampleFromPaths(variants_->param_space())) {}

Status SampleFromResolver::SetSearchProperties(const std::string& metric, const std::string& mode,
                                               const json& param_space) {
  return variants_->SetSearchProperties(metric, mode, param_space);
}

Suggestion SampleFromResolver::Suggest(const std::string& trial_id) {
  if (state_ == State::kIdle) {
    if (!variants_->HasNext()) return Suggestion::Finished();
    if (!ask_) {
      state_ = State::kFailed;
      error_ = "no driver link to compute the sample_from values";
      return Suggestion::Finished();
    }
    state_before_out_ = variants_->SaveState();
    out_ = variants_->Next();
    variant_out_ = true;
    state_ = State::kAsking;
    ask_(trial_id, out_.config, paths_, [this](DriverSamples s) { OnSamples(std::move(s)); });
  }
  switch (state_) {
    case State::kAnswered:
      state_ = State::kIdle;
      variant_out_ = false;
      return Suggestion::Config(std::move(out_.config), std::move(out_.tag));
    case State::kFailed:
      return Suggestion::Finished();
    default:
      return Suggestion::NotNow();
  }
}

void SampleFromResolver::OnSamples(DriverSamples samples) {
  if (state_ != State::kAsking) return;
  if (!samples.error.empty()) {
    state_ = State::kFailed;
    error_ = samples.error;
    return;
  }
  for (size_t i = 0; i < paths_.size(); ++i) {
    json* at = &out_.config;
    std::string dotted;
    for (const std::string& key : paths_[i]) {
      at = &(*at)[key];
      dotted += (dotted.empty() ? "" : ".") + key;
    }
    *at = std::move(samples.values[i]);
    out_.tag += fmt::format("{}{}={}", out_.tag.empty() ? "" : ",", dotted, TagValue(*at));
  }
  state_ = State::kAnswered;
}

int64_t SampleFromResolver::suggested() const {
  return variants_->suggested() - (variant_out_ ? 1 : 0);
}

json SampleFromResolver::Describe() const {
  json d = variants_->Describe();
  d["suggested"] = suggested();
  d["sample_from"] = StateName(state_);
  if (state_ == State::kFailed) d["error"] = error_;
  return d;
}

json SampleFromResolver::SaveState() const {
  return variant_out_ ? state_before_out_ : variants_->SaveState();
}

Status SampleFromResolver::RestoreState(const json& state) {
  if (Status s = variants_->RestoreState(state); !s.ok()) return s;
  state_ = State::kIdle;
  variant_out_ = false;
  out_ = {};
  return Status::Ok();
}

}  // namespace tunebus
