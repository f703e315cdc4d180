// The bodies of the libFuzzer targets (fuzz/<name>_fuzzer.cpp), one per untrusted input
// boundary (docs/explanation/security.md "Fuzzing"). Each takes one input of any bytes and returns
// 0; a bug shows as a sanitizer report or an abort (Check), never as a return value. The unit tests
// (tests/unit/fuzz_corpus_test.cpp) run every file of fuzz/corpus/<name>/ through the same
// function in the ordinary build, so a seed that stops decoding is caught there too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "libs/core/status.hpp"

namespace tunebus::fuzz {

/// A property the fuzz target checks: aborts with `what` on stderr when `ok` is false (libFuzzer
/// then saves the input as a crash).
void Check(bool ok, std::string_view what);

/// `message`: the first byte picks one of the message types the services decode
/// (proto/*.hpp, byte % kMessageTypes), the rest is the frame. Decode (the envelope),
/// PeekEnvelope and MakeDecodeError; As<T>() of the picked type and of the type the frame
/// names; a message that converts re-encodes and decodes again to the same type.
int FuzzMessage(const uint8_t* data, size_t size);
/// How many message types FuzzMessage picks from.
extern const size_t kMessageTypeCount;
/// FuzzMessage's input that picks message type `type` (proto's kType) for `frame`.
/// Errors: NotFound for a type FuzzMessage does not know.
Result<std::string> MessageInput(std::string_view type, std::string_view frame);

/// `journal_record`: one stored record (libs/journal/record_frame.hpp): UnframeRecord,
/// ReadStoredRecord; a framed payload unframes back to itself.
int FuzzJournalRecord(const uint8_t* data, size_t size);

/// `journal_replay`: a corrupt journal, records as 2-byte little-endian lengths then the stored
/// bytes. Each record read as replay reads it (ReadStoredRecord) is applied by a
/// JournalReplayer; the replayed state is encoded as a snapshot and decoded again.
int FuzzJournalReplay(const uint8_t* data, size_t size);

/// `snapshot`: a corrupt snapshot (libs/journal/snapshot.hpp DecodeSnapshot); one that decodes
/// is replayed on (JournalReplayer::Reset) and re-encoded.
int FuzzSnapshot(const uint8_t* data, size_t size);

/// `spec`: an experiment file's text through the parser tunectl and the scheduler use
/// (ParseExperimentYaml, file name "fuzz.yaml", base folder "/nonexistent/fuzz").
int FuzzSpec(const uint8_t* data, size_t size);

/// `report_line`: a trainable's report pipe (proto/PROTOCOL.md "Trainable protocol"), split into
/// lines: each line as CommandTrainable reads it (trainable::ParseReportLine), the worker's
/// msgpack encoding of it (AppendReportMetrics) and the scheduler's decoding of that
/// (TrainingResult::FromMsgpack) and of the JSON text (FromJsonText).
int FuzzReportLine(const uint8_t* data, size_t size);

/// `searcher_reply`: an external searcher's replies (proto/PROTOCOL.md section 7a), each as a
/// 2-byte little-endian length and a frame: decoded as ZmqSearcherLink decodes them
/// (proto::Decode, SearcherReplyToJson) and answered, in order, to the requests of an
/// ExternalSearcher (hello, tell, ask) that suggests and completes trials.
int FuzzSearcherReply(const uint8_t* data, size_t size);

/// `control`: one frame on the scheduler's control socket, end to end in-process: a real
/// Scheduler with a checkpoint-store and a resource-manager (no trial-worker: no command ever
/// runs), started once on inproc:// endpoints with their folders in a fresh temporary folder;
/// the frame goes through a DEALER and the reply is awaited (bounded). A submit_experiment whose
/// file names an absolute results_dir is not sent (it would write outside that folder).
int FuzzControl(const uint8_t* data, size_t size);

}  // namespace tunebus::fuzz
