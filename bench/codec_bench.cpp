// Micro benchmarks (Google Benchmark) of the per-result work on the scheduler's hot path: the
// worker frame's msgpack decode, the metrics JSON parse, and the journal record's encode.
// bench/run prints each as one JSON line (`--benchmark_format=json`, reshaped by bench/e2e.py).
#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>

#include "libs/core/trial.hpp"
#include "libs/journal/records.hpp"
#include "proto/codec.hpp"
#include "proto/worker.hpp"

namespace {

tunebus::proto::ReportResult SampleReport() {
  tunebus::proto::ReportResult r;
  r.trial_id = "bench0_00001";
  r.attempt = 1;
  r.seq = 42;
  r.metrics_json = R"({"value": 42, "decision_latency_s": 0.000123})";
  return r;
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

void BM_MetricsJsonParse(benchmark::State& state) {
  const std::string text = SampleReport().metrics_json;
  for (auto _ : state) benchmark::DoNotOptimize(nlohmann::json::parse(text));
}
BENCHMARK(BM_MetricsJsonParse);

void BM_JournalResultRecordEncode(benchmark::State& state) {
  tunebus::Trial t;
  t.trial_id = "bench0_00001";
  t.attempt = 1;
  t.last_seq = 42;
  const nlohmann::json result = {{"value", 42}, {"training_iteration", 42}, {"time_this_iter_s", 1e-6},
                                 {"time_total_s", 0.01}, {"timestamp", 1795366691}, {"trial_id", t.trial_id},
                                 {"done", false}, {"decision_latency_s", 0.000123}};
  for (auto _ : state) benchmark::DoNotOptimize(tunebus::journal::EncodeRecord(tunebus::journal::ResultRecord(t, result, "continue")));
}
BENCHMARK(BM_JournalResultRecordEncode);

}  // namespace

BENCHMARK_MAIN();
