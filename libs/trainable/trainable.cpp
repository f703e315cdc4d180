#include "libs/trainable/trainable.hpp"

#include <fmt/format.h>

#include "libs/trainable/builtin_trainables.hpp"
#include "libs/trainable/command_trainable.hpp"

namespace tunebus::trainable {

Status CheckTrainableAction(Action action) {
  if (!StopsAfterSaving(action)) return Status::Ok();
  return Status::InvalidArgument(
      fmt::format("a trainable takes continue, checkpoint or stop, not '{}'", ActionName(action)));
}

std::optional<Report> Trainable::TakeReport() {
  if (reports_.empty()) return std::nullopt;
  Report r = std::move(reports_.front());
  reports_.pop_front();
  return r;
}

void Trainable::QueueReport(Report report) {
  reports_.push_back(std::move(report));
  ++awaiting_;
}

bool Trainable::ConsumeAwaited() {
  if (awaiting_ == 0) return false;
  --awaiting_;
  return true;
}

void Trainable::End(ExitStatus status) {
  if (ended_) return;
  ended_ = true;
  awaiting_ = 0;
  exit_ = std::move(status);
}

Result<std::unique_ptr<Trainable>> MakeTrainable(const TrainableDef& def, TrialSetup setup) {
  if (!def.builtin.empty() && !def.command.empty()) {
    return Status::InvalidArgument("trainable has both a command and a builtin; give one");
  }
  if (!def.builtin.empty()) return MakeBuiltinTrainable(def.builtin, std::move(setup));
  if (def.command.empty()) {
    return Status::InvalidArgument("trainable has neither a command nor a builtin");
  }
  std::unique_ptr<Trainable> t = std::make_unique<CommandTrainable>(def, std::move(setup));
  return t;
}

}  // namespace tunebus::trainable
