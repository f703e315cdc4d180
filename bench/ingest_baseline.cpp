// Raw ingest limit (the baseline of the result-throughput benchmark): the physical
// ceiling of this machine for tunebus's result path without tunebus logic. `senders` DEALER
// threads stream msgpack `report_result` frames (the worker protocol's own struct, the noop
// trainable's metrics as a msgpack map, as trial-workers send them) as fast as ZeroMQ takes
// them to one ROUTER; the receiver drains what has arrived (up to `max_batch`), decodes each
// frame (proto::Decode + As<ReportResult>), puts them in one RocksDB WriteBatch and commits it
// with one synced write. Prints one JSON object:
//   {"benchmark": "raw_ingest", "senders", "results", "batches", "seconds", "results_per_s",
//    "mean_batch", "machine"}
// Usage: ingest_baseline [--results N] [--senders N] [--dir PATH] [--max-batch N]
#include <fmt/format.h>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "bench/machine.hpp"
#include "proto/codec.hpp"
#include "proto/worker.hpp"

namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kEndpoint = "inproc://raw-ingest";

void Send(zmq::context_t& ctx, int sender, int64_t count) {
  zmq::socket_t s(ctx, zmq::socket_type::dealer);
  s.connect(kEndpoint);
  tunebus::proto::ReportResult r;
  r.trial_id = fmt::format("bench0_{:05d}", sender);
  r.attempt = 1;
  msgpack::sbuffer metrics;
  for (int64_t seq = 1; seq <= count; ++seq) {
    r.seq = seq;
    // What a trial-worker sends for a noop report: the metrics as a msgpack map (packed here
    // with the least work, so the senders take as little of the 2 cores as they can).
    metrics.clear();
    msgpack::packer<msgpack::sbuffer> pk(metrics);
    pk.pack_map(2);
    pk.pack("decision_latency_s");
    pk.pack(0.000123);
    pk.pack("value");
    pk.pack(seq);
    r.metrics.bytes.assign(metrics.data(), metrics.size());
    r.time_this_iter_s = 1e-6;
    const std::string bytes = tunebus::proto::Encode(r);
    s.send(zmq::buffer(bytes), zmq::send_flags::none);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int64_t results = 1'000'000;
  int senders = 4;
  int64_t max_batch = 10'000;
  std::string dir =
      (std::filesystem::temp_directory_path() / fmt::format("raw-ingest-{}", ::getpid())).string();
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--results")) results = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--senders")) senders = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--dir")) dir = argv[i + 1];
    if (!std::strcmp(argv[i], "--max-batch")) max_batch = std::atoll(argv[i + 1]);
  }
  std::filesystem::remove_all(dir);
  rocksdb::Options options;
  options.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  if (auto s = rocksdb::DB::Open(options, dir, &raw); !s.ok()) {
    std::fprintf(stderr, "cannot open %s: %s\n", dir.c_str(), s.ToString().c_str());
    return 1;
  }
  std::unique_ptr<rocksdb::DB> db(raw);
  rocksdb::WriteOptions sync;
  sync.sync = true;

  zmq::context_t ctx;
  zmq::socket_t router(ctx, zmq::socket_type::router);
  router.bind(kEndpoint);
  const int64_t per_sender = results / senders;
  const int64_t total = per_sender * senders;
  std::vector<std::thread> threads;
  const auto t0 = Clock::now();
  for (int i = 0; i < senders; ++i) threads.emplace_back(Send, std::ref(ctx), i, per_sender);

  int64_t got = 0, batches = 0, bad = 0;
  zmq::message_t peer, payload;
  while (got < total) {
    rocksdb::WriteBatch batch;
    int64_t in_batch = 0;
    auto flags = zmq::recv_flags::none;  // block for the first frame of a batch, then drain
    while (in_batch < max_batch && got + in_batch < total && router.recv(peer, flags)) {
      (void)router.recv(payload);
      auto d = tunebus::proto::Decode(payload.data(), payload.size());
      auto r = d.ok() ? d->As<tunebus::proto::ReportResult>()
                      : decltype(d->As<tunebus::proto::ReportResult>())(d.status());
      if (!r.ok()) {
        ++bad;
      } else {
        batch.Put(fmt::format("{}/{}/{:012d}", r->trial_id, r->attempt, r->seq),
                  rocksdb::Slice(static_cast<const char*>(payload.data()), payload.size()));
      }
      ++in_batch;
      flags = zmq::recv_flags::dontwait;
    }
    if (auto s = db->Write(sync, &batch); !s.ok()) {
      std::fprintf(stderr, "write failed: %s\n", s.ToString().c_str());
      return 1;
    }
    got += in_batch;
    ++batches;
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  for (auto& t : threads) t.join();
  db.reset();
  std::filesystem::remove_all(dir);
  nlohmann::json out = {{"benchmark", "raw_ingest"},
                        {"senders", senders},
                        {"sender_kind", "threads (inproc DEALER)"},
                        {"results", got},
                        {"bad", bad},
                        {"batches", batches},
                        {"seconds", seconds},
                        {"results_per_s", double(got) / seconds},
                        {"mean_batch", double(got) / double(batches)},
                        {"sync", "one synced WriteBatch per batch"},
                        {"machine", tunebus::bench::Machine()}};
  std::printf("%s\n", out.dump().c_str());
  return bad == 0 ? 0 : 1;
}
