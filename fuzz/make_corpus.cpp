// fuzz_make_corpus: writes the seed corpora of the fuzz targets (fuzz/corpus/<target>/) from the
// project's own encoders, so every seed is a real frame, record or snapshot of this version.
// Usage: build/bin/fuzz_make_corpus SOURCE_DIR   (SOURCE_DIR: the repository; the experiment
// files of examples/ and tests/unit/data/spec/ are read from it, fuzz/corpus/ is rewritten).
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz/fuzz_targets.hpp"
#include "libs/journal/record_frame.hpp"
#include "libs/journal/records.hpp"
#include "libs/journal/replay.hpp"
#include "libs/journal/snapshot.hpp"
#include "proto/codec.hpp"
#include "proto/control.hpp"
#include "proto/events.hpp"
#include "proto/resources.hpp"
#include "proto/store.hpp"
#include "proto/worker.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace tunebus;

namespace {

fs::path g_out;

void Write(const std::string& target, const std::string& name, const std::string& bytes) {
  const fs::path dir = g_out / target;
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary) << bytes;
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A frame of a message given as JSON (the searcher's and control peers' view), with v and id.
std::string Frame(json m, uint64_t id = 1) {
  if (!m.contains("v")) m["v"] = proto::kProtocolVersion;
  m["id"] = id;
  const std::vector<uint8_t> bytes = json::to_msgpack(m);
  return std::string(bytes.begin(), bytes.end());
}

// 2-byte little-endian length, then the bytes (journal_replay's and searcher_reply's framing).
std::string Chunk(const std::string& bytes) {
  std::string out;
  out.push_back(char(bytes.size() & 0xff));
  out.push_back(char((bytes.size() >> 8) & 0xff));
  return out + bytes.substr(0, 0xffff);
}

template <typename M>
void MessageSeed(const M& m, const std::string& suffix = "") {
  Result<std::string> input = fuzz::MessageInput(M::kType, proto::Encode(m));
  if (!input.ok()) {
    std::fprintf(stderr, "%s\n", input.status().ToString().c_str());
    std::exit(1);
  }
  Write("message", std::string(M::kType) + suffix, *input);
}

void MessageSeeds(const std::string& mock_yaml) {
  using namespace tunebus::proto;
  SubmitExperiment submit;
  submit.spec_yaml = mock_yaml;
  submit.base_dir = "/tmp/fuzz";
  submit.source_name = "experiment.yaml";
  MessageSeed(submit);
  MessageSeed(WorkingDirStat{});
  WorkingDirPut put;
  put.digest = std::string(64, 'a');
  put.data = {'t', 'a', 'r'};
  put.last = true;
  MessageSeed(put);
  ListTrials list;
  list.status = "RUNNING";
  list.limit = 10;
  MessageSeed(list);
  MessageSeed(ShowTrial{});
  MessageSeed(FetchCheckpoint{});
  MessageSeed(CheckpointChunk{});
  MessageSeed(StopTrialCommand{});
  MessageSeed(PauseTrialCommand{});
  MessageSeed(ResumeTrialCommand{});
  AddTrialCommand add;
  add.config_json = R"({"lr": 0.01})";
  MessageSeed(add);
  SetTrialResourcesCommand set;
  set.trial_id = "abc_00000";
  set.resources = {{"cpu", 2}, {"gpu", 0.5}};
  MessageSeed(set);
  MessageSeed(ResumeExperimentCommand{});
  MessageSeed(ListExperiments{});
  MessageSeed(StopExperiment{});
  MessageSeed(GetExperiment{});
  MessageSeed(ListWorkers{});
  MessageSeed(ControlReply{});
  MessageSeed(ErrorReply{});
  MessageSeed(SchedulerEvent{});
  MessageSeed(RegisterNode{});
  MessageSeed(RegisterNodeAck{});
  MessageSeed(NodeHeartbeat{});
  MessageSeed(Allocate{});
  MessageSeed(AllocateReply{});
  MessageSeed(Release{});
  MessageSeed(ReleaseReply{});
  MessageSeed(AllocateBatch{});
  MessageSeed(AllocateBatchReply{});
  MessageSeed(ReleaseBatch{});
  MessageSeed(ReleaseBatchReply{});
  MessageSeed(GetClusterView{});
  MessageSeed(ClusterView{});
  MessageSeed(NodeEvent{});
  MessageSeed(JournalAppend{});
  MessageSeed(JournalAppendAck{});
  JournalAppendMany append_many;
  append_many.parts = {{"exp-1", {"\x01record"}, 1}, {"exp-2", {"a", "b"}, 0}};
  MessageSeed(append_many);
  JournalAppendManyAck append_many_ack;
  append_many_ack.parts = {{"exp-1", 1, 1, "", ""}, {"exp-2", 0, 0, "failed_precondition", "x"}};
  MessageSeed(append_many_ack);
  MessageSeed(JournalRead{});
  MessageSeed(JournalReadReply{});
  MessageSeed(JournalTruncate{});
  MessageSeed(JournalTruncateAck{});
  MessageSeed(JournalList{});
  MessageSeed(JournalListReply{});
  MessageSeed(CheckpointPut{});
  MessageSeed(CheckpointPutAck{});
  MessageSeed(CheckpointGet{});
  MessageSeed(CheckpointGetReply{});
  MessageSeed(CheckpointList{});
  MessageSeed(CheckpointListReply{});
  MessageSeed(CheckpointDelete{});
  MessageSeed(CheckpointDeleteAck{});
  MessageSeed(StoreStatus{});
  MessageSeed(StoreStatusReply{});
  MessageSeed(RegisterWorker{});
  MessageSeed(RegisterWorkerAck{});
  MessageSeed(StartTrial{});
  ReportResult one;
  one.trial_id = "abc_00000";
  one.attempt = 1;
  one.seq = 1;
  one.metrics_json = R"({"loss": 0.5, "training_iteration": 1})";
  MessageSeed(one);
  ReportResults batch;
  ResultItem item;
  item.trial_id = "abc_00000";
  item.attempt = 1;
  item.seq = 2;
  const std::vector<uint8_t> metrics =
      json::to_msgpack(json{{"loss", 0.25}, {"acc", {1, 2}}, {"training_iteration", 2}});
  item.metrics.bytes.assign(metrics.begin(), metrics.end());
  batch.results.push_back(item);
  MessageSeed(batch);
  MessageSeed(Decision{});
  MessageSeed(Decisions{});
  MessageSeed(StopTrialRequest{});
  MessageSeed(TrialExited{});
  MessageSeed(CheckpointSaved{});
  MessageSeed(CheckpointFailed{});
  MessageSeed(WorkerHeartbeat{});
}

// A small experiment's journal: each record framed as the store holds it.
std::vector<std::string> JournalRecords(const std::string& mock_yaml) {
  Trial t0;
  t0.trial_id = "5f3a1_00000";
  t0.index = 0;
  t0.config = {{"lr", 0.01}};
  t0.experiment_tag = "0_lr=0.01";
  t0.resources = Resources{};
  Trial t1 = t0;
  t1.trial_id = "5f3a1_00001";
  t1.index = 1;
  t1.config = {{"lr", 0.1}};
  t1.experiment_tag = "1_lr=0.1";
  std::vector<json> records = {
      journal::ExperimentSubmitted({"5f3a1", 7, 1.7e9, "/tmp/fuzz", "experiment.yaml"}, mock_yaml),
      journal::TrialAdded(t0), journal::TrialAdded(t1),
      journal::SearcherDelta(json::array({{{"event", "suggested"}, {"trial_id", t0.trial_id}}}))};
  t0.status = TrialStatus::kRunning;
  t0.attempt = 1;
  t0.worker_id = "w1";
  records.push_back(journal::TrialStarted(t0));
  records.push_back(journal::ResultRecord(
      t0, json{{"mean_accuracy", 0.5}, {"training_iteration", 1}}, Action::kContinue));
  CheckpointRef ref;
  ref.checkpoint_id = "5f3a1_00000/1/ckpt-1";
  ref.training_iteration = 1;
  ref.score = 0.5;
  ref.size_bytes = 100;
  records.push_back(journal::CheckpointSavedRecord(t0, ref));
  t0.status = TrialStatus::kTerminated;
  records.push_back(journal::TrialStatusRecord(t0));
  records.push_back(journal::TrialSchedulerDelta(json{{"rungs", json::array()}}));
  records.push_back(journal::ExperimentEnded(ExperimentStatus::kFinished, "all trials ended"));
  records.push_back(journal::ExperimentResumed(1.7e9 + 60, RerunMode::kNone));
  std::vector<std::string> out;
  for (const json& r : records) out.push_back(journal::FrameRecord(journal::EncodeRecord(r)));
  return out;
}

void JournalSeeds(const std::string& mock_yaml) {
  const std::vector<std::string> records = JournalRecords(mock_yaml);
  journal::JournalReplayer replayer;
  std::string journal;
  for (size_t i = 0; i < records.size(); ++i) {
    Result<json> r = journal::ReadStoredRecord(records[i]);
    const std::string kind = r.ok() ? (*r)["kind"].get<std::string>() : "bad";
    Write("journal_record", fmt::format("{:02}_{}", i, kind), records[i]);
    if (r.ok()) (void)replayer.Apply(*r);
    journal += Chunk(records[i]);
    Write("journal_replay", fmt::format("upto_{:02}_{}", i, kind), journal);
    Write("snapshot", fmt::format("after_{:02}_{}", i, kind),
          journal::EncodeSnapshot(replayer.state()));
  }
  // An unframed record (journals written before frames) and a torn one.
  Write("journal_record", "unframed_experiment_ended",
        journal::EncodeRecord(journal::ExperimentEnded(ExperimentStatus::kError, "fuzz")));
  Write("journal_record", "torn", records[1].substr(0, records[1].size() / 2));
}

void SpecSeeds(const fs::path& source) {
  for (const fs::path& dir : {source / "examples" / "asha", source / "examples" / "digits",
                              source / "examples" / "mock", source / "tests/unit/data/spec"}) {
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() != ".yaml") continue;
      Write("spec", dir.filename().string() + "_" + e.path().filename().string(),
            ReadFile(e.path()));
    }
  }
}

void ReportLineSeeds() {
  Write("report_line", "one",
        R"({"loss": 0.5, "training_iteration": 1})"
        "\n");
  Write("report_line", "nested",
        R"({"mean_accuracy": 0.91, "info": {"lr": 0.01, "tags": ["a", "b"]}, "done": false})"
        "\n");
  Write("report_line", "several",
        "{\"loss\": 1}\r\n\n   \n{\"loss\": 0.5, \"hostname\": \"x\", \"pid\": 3}\n");
  Write("report_line", "numbers",
        R"({"i": -9223372036854775808, "u": 18446744073709551615, "f": 1e308, "z": -0.0})"
        "\n");
  Write("report_line", "not_an_object", "[1, 2, 3]\n");
  Write("report_line", "unicode",
        R"({"name": "caf\u00e9 \ud83d\ude00", "n": null})"
        "\n");
}

void SearcherSeeds() {
  const std::string hello = Frame({{"type", "hello_ok"}, {"searcher", "fuzz"}, {"version", "1"}});
  const std::string tell = Frame({{"type", "tell_ok"}, {"observations", 1}});
  auto suggestion = [](const std::string& trial) {
    return Frame({{"type", "suggestion"},
                  {"trial_id", trial},
                  {"status", "config"},
                  {"params", {{"lr", 0.01}, {"model.depth", 3}, {"opt", "adam"}, {"width", 24}}}});
  };
  std::string run = Chunk(hello) + Chunk(suggestion("t0"));
  for (int i = 1; i < 4; ++i) {
    run += Chunk(tell) + Chunk(tell) + Chunk(suggestion("t" + std::to_string(i)));
  }
  Write("searcher_reply", "four_trials", run);
  Write("searcher_reply", "not_now",
        Chunk(hello) +
            Chunk(Frame({{"type", "suggestion"}, {"trial_id", "t0"}, {"status", "not_now"}})) +
            Chunk(suggestion("t0")));
  Write("searcher_reply", "finished",
        Chunk(hello) +
            Chunk(Frame({{"type", "suggestion"}, {"trial_id", "t0"}, {"status", "finished"}})));
  Write("searcher_reply", "error_then_hello",
        Chunk(Frame({{"type", "error"},
                     {"code", "failed_precondition"},
                     {"message", "unknown session"},
                     {"request_type", "hello"}})) +
            Chunk(hello) + Chunk(suggestion("t0")));
  Write("searcher_reply", "wrong_type", Chunk(Frame({{"type", "tell_ok"}})) + Chunk(hello));
}

void ControlSeeds(const std::string& mock_yaml) {
  Write("control", "list_experiments", Frame({{"type", "list_experiments"}}));
  Write("control", "list_trials",
        Frame({{"type", "list_trials"}, {"status", ""}, {"offset", 0}, {"limit", 5}}));
  Write("control", "show_trial", Frame({{"type", "show_trial"}, {"trial_id", "x_00000"}}));
  Write("control", "get_experiment", Frame({{"type", "get_experiment"}, {"experiment", "mock"}}));
  Write("control", "list_workers", Frame({{"type", "list_workers"}}));
  Write("control", "submit_experiment",
        Frame({{"type", "submit_experiment"},
               {"spec_yaml", mock_yaml},
               {"base_dir", "/tmp/fuzz"},
               {"source_name", "experiment.yaml"}}));
  Write("control", "stop_experiment", Frame({{"type", "stop_experiment"}, {"interrupt", true}}));
  Write("control", "add_trial_command",
        Frame({{"type", "add_trial_command"}, {"config_json", R"({"lr": 0.5})"}}));
  Write("control", "stop_trial_command",
        Frame({{"type", "stop_trial_command"}, {"trial_id", "x_00000"}}));
  Write("control", "pause_trial_command",
        Frame({{"type", "pause_trial_command"}, {"trial_id", "x_00000"}}));
  Write("control", "set_trial_resources_command",
        Frame({{"type", "set_trial_resources_command"},
               {"trial_id", "x_00000"},
               {"resources", {{"cpu", 2}}}}));
  Write("control", "resume_experiment_command",
        Frame({{"type", "resume_experiment_command"}, {"name", "mock"}}));
  Write("control", "working_dir_stat",
        Frame({{"type", "working_dir_stat"}, {"digest", std::string(64, '0')}}));
  Write("control", "fetch_checkpoint",
        Frame({{"type", "fetch_checkpoint"}, {"trial_id", "x_00000"}, {"chunk_index", 0}}));
  Write("control", "unknown_type", Frame({{"type", "no_such_request"}}));
  Write("control", "wrong_version", Frame({{"type", "list_workers"}, {"v", 9}}));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s SOURCE_DIR\n", argv[0]);
    return 2;
  }
  const fs::path source = argv[1];
  g_out = source / "fuzz" / "corpus";
  fs::remove_all(g_out);
  const std::string mock_yaml = ReadFile(source / "examples/mock/experiment.yaml");
  MessageSeeds(mock_yaml);
  JournalSeeds(mock_yaml);
  SpecSeeds(source);
  ReportLineSeeds();
  SearcherSeeds();
  ControlSeeds(mock_yaml);
  std::printf("wrote %s\n", g_out.c_str());
  return 0;
}
