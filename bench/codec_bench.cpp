// Micro benchmarks (Google Benchmark) of the per-result work on the scheduler's hot path: the
// worker frame's msgpack decode, the metrics becoming the trial's result (the worker's msgpack
// map, against the former JSON text and JSON document paths), the journal record's encode, and
// the result file writer's formatting.
// bench/run prints each as one JSON line (`--benchmark_format=json`, reshaped by bench/e2e.py).
#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>

#include "libs/core/trial.hpp"
#include "libs/core/trial_view.hpp"
#include "libs/journal/records.hpp"
#include "libs/tune/training_result.hpp"
#include "proto/codec.hpp"
#include "proto/worker.hpp"
#include "services/scheduler/results/result_text.hpp"

namespace {

// A noop report's metrics as JSON text (what a command trainable writes).
constexpr const char* kMetricsText = R"({"value": 42, "decision_latency_s": 0.000123})";

// A noop report as a trial-worker sends it: the metrics as a msgpack map.
tunebus::proto::ReportResult SampleReport() {
  tunebus::proto::ReportResult r;
  r.trial_id = "bench0_00001";
  r.attempt = 1;
  r.seq = 42;
  nlohmann::json::to_msgpack(nlohmann::json::parse(kMetricsText), r.metrics.bytes);
  return r;
}

// Ray Tune's auto-filled keys, in the order TrialRunner::OnResult sets them.
void AutoFill(tunebus::TrainingResult& r) {
  r.SetString("experiment_tag", "1");
  r.SetInt("iterations_since_restore", 42);
  r.SetDouble("time_since_restore", 0.01);
  r.SetDouble("time_this_iter_s", 1e-6);
  r.SetDouble("time_total_s", 0.01);
  r.SetInt("timestamp", 1795366691);
  r.SetInt("training_iteration", 42);
  r.SetString("trial_id", "bench0_00001");
  r.SetBool("done", false);
}

void BM_ReportResultEncode(benchmark::State& state) {
  const auto r = SampleReport();
  for (auto _ : state) benchmark::DoNotOptimize(tunebus::proto::Encode(r));
}
BENCHMARK(BM_ReportResultEncode);

void BM_ReportResultDecode(benchmark::State& state) {
  const std::string bytes = tunebus::proto::Encode(SampleReport());
  for (auto _ : state) {
    auto d = tunebus::proto::Decode(bytes.data(), bytes.size());
    benchmark::DoNotOptimize(d->As<tunebus::proto::ReportResult>());
  }
}
BENCHMARK(BM_ReportResultDecode);

// A report's metrics becoming the trial's result: Ray Tune's auto-filled keys added, encoded
// once. BM_ResultAsJsonDocument is the first path (a JSON document per result), the baseline of
// BM_ResultAsTrainingResult (JSON text, the form of clients that send metrics_json) and of
// BM_ResultFromMsgpackMap (the trial-worker's form: the map decoded with the frame).
void BM_ResultAsJsonDocument(benchmark::State& state) {
  std::string bytes;
  for (auto _ : state) {
    nlohmann::json r = nlohmann::json::parse(kMetricsText);
    r["training_iteration"] = 42;
    r["time_this_iter_s"] = 1e-6;
    r["time_total_s"] = 0.01;
    r["timestamp"] = 1795366691;
    r["trial_id"] = "bench0_00001";
    r["experiment_tag"] = "1";
    r["iterations_since_restore"] = 42;
    r["time_since_restore"] = 0.01;
    r["done"] = false;
    bytes.clear();
    nlohmann::json::to_msgpack(r, bytes);
    benchmark::DoNotOptimize(bytes.data());
  }
}
BENCHMARK(BM_ResultAsJsonDocument);

void BM_ResultAsTrainingResult(benchmark::State& state) {
  for (auto _ : state) {
    auto r = tunebus::TrainingResult::FromJsonText(kMetricsText);
    AutoFill(*r);
    benchmark::DoNotOptimize(r->Encode());
  }
}
BENCHMARK(BM_ResultAsTrainingResult);

void BM_ResultFromMsgpackMap(benchmark::State& state) {
  const std::string frame = tunebus::proto::Encode(SampleReport());
  const auto d = tunebus::proto::Decode(frame.data(), frame.size());
  const auto report = d->As<tunebus::proto::ReportResult>();
  for (auto _ : state) {
    auto r = tunebus::TrainingResult::FromMsgpack(report->metrics.decoded);
    AutoFill(*r);
    benchmark::DoNotOptimize(r->Encode());
  }
}
BENCHMARK(BM_ResultFromMsgpackMap);

// A noop trial's result as the runner completes it (the auto-filled keys of Ray Tune).
nlohmann::json SampleResult() {
  return {{"value", 42},
          {"training_iteration", 42},
          {"time_this_iter_s", 1e-6},
          {"time_total_s", 0.01},
          {"timestamp", 1795366691},
          {"trial_id", "bench0_00001"},
          {"experiment_tag", "1"},
          {"done", false},
          {"iterations_since_restore", 42},
          {"time_since_restore", 0.01},
          {"decision_latency_s", 0.000123}};
}

void BM_JournalResultRecordEncode(benchmark::State& state) {
  tunebus::Trial t;
  t.trial_id = "bench0_00001";
  t.attempt = 1;
  t.last_seq = 42;
  t.SetLastResult(SampleResult());
  for (auto _ : state)
    benchmark::DoNotOptimize(
        tunebus::journal::EncodeResultRecord(t, t.last_result_msgpack, tunebus::Action::kContinue));
}
BENCHMARK(BM_JournalResultRecordEncode);

// A running trial as the scheduler journals it and as experiment_state.json shows it.
tunebus::Trial SampleTrial() {
  tunebus::Trial t;
  t.trial_id = "bench0_00001";
  t.index = 1;
  t.config = {{"lr", 0.001}, {"layers", 4}};
  t.experiment_tag = "1_layers=4,lr=0.001";
  t.resources = *tunebus::Resources::FromAmounts({{"cpu", 1}});
  t.status = tunebus::TrialStatus::kRunning;
  t.attempt = 1;
  t.worker_id = "w1";
  t.start_time_s = 1795366691.25;
  t.training_iteration = 42;
  t.time_total_s = 0.01;
  t.SetLastResult(SampleResult());
  t.checkpoints.push_back({"bench0/bench0_00001/00000040-a1", 40, 0.009, 0.5, 1024});
  return t;
}

// The trial records the scheduler appends per trial (added, started, status), each written
// straight from the trial.
void BM_JournalTrialRecordsEncode(benchmark::State& state) {
  const tunebus::Trial t = SampleTrial();
  for (auto _ : state) {
    benchmark::DoNotOptimize(tunebus::journal::EncodeTrialAdded(t));
    benchmark::DoNotOptimize(tunebus::journal::EncodeTrialStarted(t));
    benchmark::DoNotOptimize(tunebus::journal::EncodeTrialStatusRecord(t));
  }
}
BENCHMARK(BM_JournalTrialRecordsEncode);

// One trial of experiment_state.json: its JSON text, written without documents.
void BM_TrialStateText(benchmark::State& state) {
  const tunebus::Trial t = SampleTrial();
  std::string text;
  for (auto _ : state) {
    text.clear();
    tunebus::AppendTrialJson(t, "/results/bench", text);
    benchmark::DoNotOptimize(text.data());
  }
}
BENCHMARK(BM_TrialStateText);

// The result file writer's work per result: decode, result.json line, progress.csv row.
void BM_ResultFileLines(benchmark::State& state) {
  tunebus::Trial t;
  t.SetLastResult(SampleResult());
  tunebus::ResultText text;
  text.Decode(t.last_result_msgpack);
  const std::vector<std::string> columns = text.Keys();
  std::string line, row;
  for (auto _ : state) {
    line.clear();
    row.clear();
    text.Decode(t.last_result_msgpack);
    text.AppendJsonLine(line);
    text.AppendCsvRow(columns, row);
    benchmark::DoNotOptimize(line.data());
    benchmark::DoNotOptimize(row.data());
  }
}
BENCHMARK(BM_ResultFileLines);

}  // namespace

BENCHMARK_MAIN();
