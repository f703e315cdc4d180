#include <array>
#include <string>
#include <string_view>

#include "fuzz/fuzz_targets.hpp"
#include "libs/tune/training_result.hpp"
#include "proto/codec.hpp"
#include "proto/control.hpp"
#include "proto/events.hpp"
#include "proto/resources.hpp"
#include "proto/store.hpp"
#include "proto/worker.hpp"

namespace tunebus::fuzz {

namespace {

using namespace tunebus::proto;

// What the services do with a converted message beyond its fields: the scheduler turns a
// result's metrics into a TrainingResult (services/scheduler/workers/worker_handlers.cpp).
void Use(const ReportResult& m) {
  if (!m.metrics_json.empty()) {
    (void)TrainingResult::FromJsonText(m.metrics_json);
  } else if (m.metrics.decoded.type != msgpack::type::NIL) {
    (void)TrainingResult::FromMsgpack(m.metrics.decoded);
  }
}
void Use(const ReportResults& m) {
  for (const ResultItem& r : m.results) {
    if (!r.metrics_json.empty()) {
      (void)TrainingResult::FromJsonText(r.metrics_json);
    } else if (r.metrics.decoded.type != msgpack::type::NIL) {
      (void)TrainingResult::FromMsgpack(r.metrics.decoded);
    }
  }
}
template <typename M>
void Use(const M&) {}

// As<M>(); a message that converts is re-encoded, and its encoding decodes and converts again.
template <typename M>
void Convert(const Decoded& d) {
  Result<M> m = d.As<M>();
  if (!m.ok()) return;
  Use(*m);
  const std::string bytes = Encode(*m);
  Result<Decoded> again = Decode(bytes.data(), bytes.size());
  Check(again.ok(), std::string(M::kType) + ": a converted message does not decode again: " +
                        again.status().ToString());
  Check(again->type() == d.type(), std::string(M::kType) + ": re-encoded with another type");
  Result<M> m2 = again->As<M>();
  Check(m2.ok(), std::string(M::kType) +
                     ": a converted message does not convert again: " + m2.status().ToString());
}

using ConvertFn = void (*)(const Decoded&);
struct MessageType {
  std::string_view type;
  ConvertFn convert;
};

template <typename M>
constexpr MessageType Entry() {
  return {M::kType, &Convert<M>};
}

// Every message type of proto/*.hpp.
constexpr std::array kMessageTypes = {
    // control.hpp
    Entry<SubmitExperiment>(), Entry<WorkingDirStat>(), Entry<WorkingDirPut>(), Entry<ListTrials>(),
    Entry<ShowTrial>(), Entry<FetchCheckpoint>(), Entry<CheckpointChunk>(),
    Entry<StopTrialCommand>(), Entry<PauseTrialCommand>(), Entry<ResumeTrialCommand>(),
    Entry<AddTrialCommand>(), Entry<SetTrialResourcesCommand>(), Entry<ResumeExperimentCommand>(),
    Entry<ListExperiments>(), Entry<StopExperiment>(), Entry<GetExperiment>(), Entry<ListWorkers>(),
    Entry<ControlReply>(),
    // envelope.hpp, events.hpp
    Entry<ErrorReply>(), Entry<SchedulerEvent>(),
    // resources.hpp
    Entry<RegisterNode>(), Entry<RegisterNodeAck>(), Entry<NodeHeartbeat>(), Entry<Allocate>(),
    Entry<AllocateReply>(), Entry<Release>(), Entry<ReleaseReply>(), Entry<AllocateBatch>(),
    Entry<AllocateBatchReply>(), Entry<ReleaseBatch>(), Entry<ReleaseBatchReply>(),
    Entry<GetClusterView>(), Entry<ClusterView>(), Entry<NodeEvent>(),
    // store.hpp
    Entry<JournalAppend>(), Entry<JournalAppendAck>(), Entry<JournalRead>(),
    Entry<JournalReadReply>(), Entry<JournalTruncate>(), Entry<JournalTruncateAck>(),
    Entry<JournalList>(), Entry<JournalListReply>(), Entry<CheckpointPut>(),
    Entry<CheckpointPutAck>(), Entry<CheckpointGet>(), Entry<CheckpointGetReply>(),
    Entry<CheckpointList>(), Entry<CheckpointListReply>(), Entry<CheckpointDelete>(),
    Entry<CheckpointDeleteAck>(), Entry<StoreStatus>(), Entry<StoreStatusReply>(),
    // worker.hpp
    Entry<RegisterWorker>(), Entry<RegisterWorkerAck>(), Entry<StartTrial>(), Entry<ReportResult>(),
    Entry<ReportResults>(), Entry<Decision>(), Entry<Decisions>(), Entry<StopTrialRequest>(),
    Entry<TrialExited>(), Entry<CheckpointSaved>(), Entry<CheckpointFailed>(),
    Entry<WorkerHeartbeat>(),
    // Added since: at the end, so the corpus' seeds keep their type byte.
    Entry<JournalAppendMany>(), Entry<JournalAppendManyAck>()};

}  // namespace

const size_t kMessageTypeCount = kMessageTypes.size();

Result<std::string> MessageInput(std::string_view type, std::string_view frame) {
  for (size_t i = 0; i < kMessageTypes.size(); ++i) {
    if (kMessageTypes[i].type == type) return std::string(1, char(i)) + std::string(frame);
  }
  return Status::NotFound("no message type " + std::string(type));
}

int FuzzMessage(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const MessageType& picked = kMessageTypes[data[0] % kMessageTypes.size()];
  const uint8_t* frame = data + 1;
  const size_t frame_size = size - 1;
  Result<Decoded> d = Decode(frame, frame_size);
  if (!d.ok()) {
    const ErrorReply e = MakeDecodeError(frame, frame_size, d.status());
    Check(e.request_type.size() <= 64, "PeekEnvelope: type longer than 64 bytes");
    return 0;
  }
  picked.convert(*d);
  for (const MessageType& t : kMessageTypes) {
    if (t.type == d->type() && t.convert != picked.convert) t.convert(*d);
  }
  return 0;
}

}  // namespace tunebus::fuzz
