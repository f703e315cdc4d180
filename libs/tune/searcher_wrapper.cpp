#include "libs/tune/searcher_wrapper.hpp"

namespace tunebus {

using nlohmann::json;

json SearcherWrapper::SaveState() const {
  return {{"own", SaveOwn()}, {"inner", inner_->SaveState()}};
}

Status SearcherWrapper::RestoreState(const json& state) {
  events_ = json::array();
  if (state.is_null()) {
    if (Status s = RestoreOwn(nullptr); !s.ok()) return s;
    return inner_->RestoreState(nullptr);
  }
  if (!state.is_object() || !state.contains("own") || !state.contains("inner")) {
    return Status::InvalidArgument(
        std::string(name()) + " searcher state must be {\"own\", \"inner\"}, got " + state.dump());
  }
  if (Status s = RestoreOwn(state["own"]); !s.ok()) return s;
  return inner_->RestoreState(state["inner"]);
}

json SearcherWrapper::TakeStateDelta() {
  json inner = inner_->TakeStateDelta();
  if (events_.empty() && inner.is_null()) return nullptr;
  json delta = json::object();
  if (!events_.empty()) delta["events"] = std::exchange(events_, json::array());
  if (!inner.is_null()) delta["inner"] = std::move(inner);
  return delta;
}

Status SearcherWrapper::ApplyStateDelta(const json& delta) {
  if (!delta.is_object()) {
    return Status::Corruption(std::string(name()) + ": a searcher delta is an object, got " +
                              delta.dump());
  }
  if (auto it = delta.find("events"); it != delta.end()) {
    if (!it->is_array()) return Status::Corruption("searcher delta: events must be an array");
    for (const json& e : *it) {
      if (Status s = Apply(e); !s.ok()) return s;
    }
  }
  if (auto it = delta.find("inner"); it != delta.end()) return inner_->ApplyStateDelta(*it);
  return Status::Ok();
}

void SearcherWrapper::Record(json event) {
  (void)Apply(event);
  events_.push_back(std::move(event));
}

}  // namespace tunebus
