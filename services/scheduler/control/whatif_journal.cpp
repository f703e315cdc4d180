// WhatIfJournal: journal records -> RecordedExperiment (whatif_journal.hpp).
#include "services/scheduler/control/whatif_journal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <msgpack.hpp>
#include <optional>
#include <utility>

#include "libs/core/fields.hpp"
#include "libs/journal/record_frame.hpp"
#include "libs/journal/record_kind.hpp"
#include "libs/journal/records.hpp"

namespace tunebus {

using nlohmann::json;
namespace rk = result_keys;

WhatIfJournal::WhatIfJournal(std::vector<std::string> keys) : keys_(std::move(keys)) {
  for (const char* key :
       {rk::kTrainingIteration, rk::kTimeThisIterS, rk::kTimeTotalS, rk::kTimestamp}) {
    if (std::find(keys_.begin(), keys_.end(), key) == keys_.end()) keys_.emplace_back(key);
  }
  std::sort(keys_.begin(), keys_.end());  // TrainingResult takes sorted runs cheapest
  keys_.erase(std::unique(keys_.begin(), keys_.end()), keys_.end());
  std::erase(keys_, std::string());
}

Status WhatIfJournal::Apply(const json& record) {
  const auto kind_field = record.find(journal::kKindField);
  if (kind_field == record.end() || !kind_field->is_string()) return Status::Ok();
  const std::optional<journal::RecordKind> kind =
      journal::FindRecordKind(kind_field->get_ref<const std::string&>());
  if (!kind) return Status::Ok();
  using journal::RecordKind;
  if (*kind != RecordKind::kTrialAdded && *kind != RecordKind::kTrialStarted &&
      *kind != RecordKind::kResult && *kind != RecordKind::kTrialStatus) {
    return Status::Ok();
  }
  try {
    const std::string& trial_id = record.at("trial_id").get_ref<const std::string&>();
    if (*kind == RecordKind::kTrialAdded) {
      if (index_.contains(trial_id)) return Status::Ok();
      index_[trial_id] = trials_.size();
      RecordedTrial t;
      t.trial_id = trial_id;
      t.config = record.value("config", json::object());
      trials_.push_back(std::move(t));
      folds_.emplace_back();
      return Status::Ok();
    }
    const auto it = index_.find(trial_id);
    if (it == index_.end()) {
      return Status::Corruption(fmt::format("a {} record names trial {}, never added before it",
                                            kind_field->get_ref<const std::string&>(), trial_id));
    }
    TrialFold& f = folds_[it->second];
    switch (*kind) {
      case RecordKind::kTrialStarted:
        f.attempt = fields::GetInteger<int64_t>(record.at("attempt"));
        break;
      case RecordKind::kResult:
        return OnResult(record, it->second);
      case RecordKind::kTrialStatus:
        f.status = record.at("status").get<std::string>();
        f.attempt = record.value("attempt", f.attempt);
        f.returned = f.returned || record.value("returned", false);
        break;
      default:
        break;
    }
  } catch (const json::exception& e) {
    return Status::Corruption(fmt::format("a malformed {} record: {}",
                                          kind_field->get_ref<const std::string&>(), e.what()));
  }
  return Status::Ok();
}

Status WhatIfJournal::OnResult(const json& r, size_t trial) {
  ResultFields f;
  f.attempt = fields::GetInteger<int64_t>(r.at("attempt"));
  f.seq = fields::GetInteger<int64_t>(r.at("seq"));
  const json& result = r.at("result");
  f.done = result.value(rk::kDone, false);
  for (const std::string& key : keys_) {
    const auto v = result.find(key);
    if (v == result.end()) continue;
    if (v->is_number_integer()) {
      f.kept.SetInt(key, fields::GetInteger<int64_t>(*v));
    } else if (v->is_number()) {
      f.kept.SetDouble(key, v->get<double>());
    }
  }
  return OnResultFields(std::move(f), trial);
}

Status WhatIfJournal::OnResultFields(ResultFields r, size_t trial) {
  TrialFold& f = folds_[trial];
  RecordedTrial& t = trials_[trial];
  ++results_seen_;
  if (r.attempt != f.attempt) return Status::Ok();  // a restarted attempt's late result
  // The copy of the previous result an older journal appended when a trainable returned
  // (journal::IsReturnCopy): no result, only its done.
  if (f.last_seq != 0 && r.seq == f.last_seq) {
    f.last_done = f.last_done || r.done;
    return Status::Ok();
  }
  f.last_seq = r.seq;
  // A restored attempt reports again from its checkpoint: its result replaces the earlier
  // attempt's from the same training_iteration on.
  if (const std::optional<double> it = r.kept.Number(rk::kTrainingIteration)) {
    while (!t.results.empty() &&
           t.results.back().Number(rk::kTrainingIteration).value_or(0.0) >= *it) {
      owners_[f.slots.back()] = -1;
      f.slots.pop_back();
      t.results.pop_back();
    }
  }
  f.last_done = r.done;
  f.slots.push_back(owners_.size());
  owners_.push_back(int64_t(trial));
  t.results.push_back(std::move(r.kept));
  return Status::Ok();
}

namespace whatif_journal {

std::string_view Str(const msgpack::object& o) {
  return o.type == msgpack::type::STR ? std::string_view(o.via.str.ptr, o.via.str.size)
                                      : std::string_view();
}

// The value of `key` in the msgpack map `map`, or null.
const msgpack::object* Find(const msgpack::object& map, std::string_view key) {
  for (uint32_t i = 0; i < map.via.map.size; ++i) {
    if (Str(map.via.map.ptr[i].key) == key) return &map.via.map.ptr[i].val;
  }
  return nullptr;
}

std::optional<int64_t> Int(const msgpack::object* o) {
  if (o == nullptr) return std::nullopt;
  if (o->type == msgpack::type::POSITIVE_INTEGER) return int64_t(o->via.u64);
  if (o->type == msgpack::type::NEGATIVE_INTEGER) return o->via.i64;
  return std::nullopt;
}

}  // namespace whatif_journal

Status WhatIfJournal::ApplyStored(std::string_view stored) {
  namespace wj = whatif_journal;
  Result<std::string_view> payload = journal::UnframeRecord(stored);
  if (!payload.ok()) return payload.status();
  thread_local msgpack::zone zone;
  msgpack::object record;
  try {
    zone.clear();
    record = msgpack::unpack(zone, payload->data(), payload->size());
  } catch (const std::exception& e) {
    return Status::Corruption(std::string("a record that is not msgpack: ") + e.what());
  }
  if (record.type != msgpack::type::MAP) return Status::Corruption("a record that is not a map");
  const msgpack::object* kind = wj::Find(record, journal::kKindField);
  if (kind == nullptr || wj::Str(*kind) != "result") {
    Result<json> decoded = journal::DecodeRecord(*payload);
    if (!decoded.ok()) return decoded.status();
    return Apply(*decoded);
  }
  const msgpack::object* trial_id = wj::Find(record, "trial_id");
  const msgpack::object* result = wj::Find(record, "result");
  const std::optional<int64_t> attempt = wj::Int(wj::Find(record, "attempt"));
  const std::optional<int64_t> seq = wj::Int(wj::Find(record, "seq"));
  if (trial_id == nullptr || trial_id->type != msgpack::type::STR || result == nullptr ||
      result->type != msgpack::type::MAP || !attempt || !seq) {
    return Status::Corruption("a malformed result record");
  }
  const auto it = index_.find(std::string(wj::Str(*trial_id)));
  if (it == index_.end()) {
    return Status::Corruption(
        fmt::format("a result record names trial {}, never added before it", wj::Str(*trial_id)));
  }
  ResultFields f;
  f.attempt = *attempt;
  f.seq = *seq;
  for (const std::string& key : keys_) {  // sorted: TrainingResult takes sorted runs cheapest
    const msgpack::object* v = wj::Find(*result, key);
    if (v == nullptr) continue;
    switch (v->type) {
      case msgpack::type::POSITIVE_INTEGER:
        f.kept.SetInt(key, int64_t(v->via.u64));
        break;
      case msgpack::type::NEGATIVE_INTEGER:
        f.kept.SetInt(key, v->via.i64);
        break;
      case msgpack::type::FLOAT32:
      case msgpack::type::FLOAT64:
        f.kept.SetDouble(key, v->via.f64);
        break;
      default:
        break;
    }
  }
  const msgpack::object* done = wj::Find(*result, rk::kDone);
  f.done = done != nullptr && done->type == msgpack::type::BOOLEAN && done->via.boolean;
  return OnResultFields(std::move(f), it->second);
}

RecordedExperiment WhatIfJournal::Take(std::string metric, std::string mode) {
  RecordedExperiment e;
  e.metric = std::move(metric);
  e.mode = std::move(mode);
  const auto last_iteration = [](const RecordedTrial& t) {
    return t.results.empty() ? 0.0 : t.results.back().Number(rk::kTrainingIteration).value_or(0.0);
  };
  double longest = 0;
  for (const RecordedTrial& t : trials_) longest = std::max(longest, last_iteration(t));
  for (size_t i = 0; i < trials_.size(); ++i) {
    const TrialFold& f = folds_[i];
    RecordedTrial& t = trials_[i];
    if (f.status == "ERROR") {
      t.end = RecordedEnd::kErrored;
    } else if (f.returned || f.last_done || last_iteration(t) >= longest) {
      t.end = RecordedEnd::kFinished;
    } else {
      t.end = RecordedEnd::kStopped;
    }
  }
  e.arrival.reserve(owners_.size());
  for (const int64_t owner : owners_) {
    if (owner >= 0) e.arrival.push_back(uint32_t(owner));
  }
  e.trials = std::move(trials_);
  *this = WhatIfJournal(std::move(keys_));
  return e;
}

}  // namespace tunebus
