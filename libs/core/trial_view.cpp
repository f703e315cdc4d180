#include "libs/core/trial_view.hpp"

#include <map>
#include <msgpack.hpp>
#include <vector>

#include "libs/core/json_text.hpp"
#include "libs/core/trial_fields.hpp"

namespace tunebus {

using nlohmann::json;

namespace {

// A trial's newest result: {} before the first.
struct LastResultOf {
  const Trial& trial;
};

void to_json(json& j, const LastResultOf& r) {
  j = r.trial.last_result_msgpack.empty() ? json::object() : r.trial.LastResult();
}

// The view's fields in key order, then "config" and "last_result" (the text writer writes them
// in this order; see AppendTrialJson).
template <class V>
void VisitTrialViewFields(const Trial& t, const std::string& experiment_dir, V&& v) {
  using fields::kNullWhenEmpty;
  v("attempt", t.attempt);
  v("checkpoints", t.checkpoints);
  v("checkpoints_not_stored", t.checkpoints_not_stored);
  v("dir", experiment_dir + "/" + t.DirName());
  v("error", t.error, kNullWhenEmpty);
  v("experiment_tag", t.experiment_tag);
  v("failures", t.failures);
  v("gpu_ids", t.gpu_ids);
  v("num_checkpoints_not_stored", t.num_checkpoints_not_stored);
  v("num_failures", t.num_failures);
  v("num_worker_losses", t.num_worker_losses);
  v("resources", t.resources.ToAmounts());
  v("restored_checkpoint_id", t.restored_checkpoint_id, kNullWhenEmpty);
  v("status", t.status);
  v("time_total_s", t.time_total_s);
  v("training_iteration", t.training_iteration);
  v("trial_id", t.trial_id);
  v("worker", t.worker_id, kNullWhenEmpty);
  v("config", t.config);
  v("last_result", LastResultOf{t});
}

// Writes each field as JSON text (nlohmann's dump form) into one object.
class TextWriter {
 public:
  explicit TextWriter(std::string& out) : o_(out) {}

  void operator()(std::string_view key, int64_t v, unsigned = 0) { o_.Int(key, v); }
  void operator()(std::string_view key, double v, unsigned = 0) { o_.Double(key, v); }
  void operator()(std::string_view key, std::string_view v, unsigned flags = 0) {
    if (flags & fields::kNullWhenEmpty) {
      o_.StringOrNull(key, v);
    } else {
      o_.String(key, v);
    }
  }
  void operator()(std::string_view key, const std::string& v, unsigned flags = 0) {
    (*this)(key, std::string_view(v), flags);
  }
  void operator()(std::string_view key, const std::optional<double>& v, unsigned = 0) {
    if (v) {
      o_.Double(key, *v);
    } else {
      o_.Null(key);
    }
  }
  void operator()(std::string_view key, TrialStatus v, unsigned = 0) {
    o_.String(key, TrialStatusName(v));
  }
  void operator()(std::string_view key, FailureKind v, unsigned = 0) {
    o_.String(key, FailureKindName(v));
  }
  void operator()(std::string_view key, const std::vector<std::string>& v, unsigned = 0) {
    o_.Array(key, v, [](const std::string& s, std::string& out) { AppendJsonString(s, out); });
  }
  void operator()(std::string_view key, const std::map<std::string, double>& v, unsigned = 0) {
    TextWriter object(o_.Key(key));
    for (const auto& [name, amount] : v) object(name, amount);
  }
  void operator()(std::string_view key, const std::vector<CheckpointRef>& v, unsigned = 0) {
    o_.Array(key, v, [](const CheckpointRef& c, std::string& out) {
      VisitCheckpointFields(c, TextWriter(out));
    });
  }
  void operator()(std::string_view key, const std::vector<CheckpointNotStored>& v, unsigned = 0) {
    o_.Array(key, v, [](const CheckpointNotStored& c, std::string& out) {
      VisitCheckpointNotStoredFields(c, TextWriter(out));
    });
  }
  void operator()(std::string_view key, const std::vector<TrialFailure>& v, unsigned = 0) {
    o_.Array(key, v, [](const TrialFailure& f, std::string& out) {
      VisitFailureFields(f, TextWriter(out));
    });
  }
  void operator()(std::string_view key, const json& v, unsigned = 0) { o_.Key(key) += v.dump(); }
  // Formatted from the stored bytes: no document of the last result is built.
  void operator()(std::string_view key, const LastResultOf& v, unsigned = 0) {
    std::string& out = o_.Key(key);
    const std::string& bytes = v.trial.last_result_msgpack;
    if (bytes.empty()) {
      out += "{}";
    } else {
      const msgpack::object_handle h = msgpack::unpack(bytes.data(), bytes.size());
      AppendJson(h.get(), out);
    }
  }

 private:
  JsonObjectText o_;
};

}  // namespace

json CheckpointToJson(const CheckpointRef& c) { return c; }

json TrialToJson(const Trial& t, const std::string& experiment_dir) {
  json j = json::object();
  VisitTrialViewFields(t, experiment_dir, fields::JsonWriter{j});
  return j;
}

void AppendTrialJson(const Trial& t, const std::string& experiment_dir, std::string& out) {
  VisitTrialViewFields(t, experiment_dir, TextWriter(out));
}

}  // namespace tunebus
