// The checkpoint-store unit tests' fixture: the real CheckpointStore on a thread with a
// temporary RocksDB directory, driven through a real ZeroMQ DEALER socket (Peer), and the
// request builders (checkpoint_store_test.cpp, checkpoint_store_outage_test.cpp).
#pragma once

#include <gtest/gtest.h>
#include <rocksdb/file_system.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "libs/metrics/metrics_server.hpp"
#include "proto/codec.hpp"
#include "proto/store.hpp"
#include "services/checkpoint-store/checkpoint_blob_store.hpp"
#include "services/checkpoint-store/checkpoint_store.hpp"
#include "services/checkpoint-store/journal_store.hpp"
#include "services/checkpoint-store/rocksdb_spdlog_logger.hpp"
#include "services/checkpoint-store/store_db.hpp"

namespace tunebus::store_test {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

inline std::string MakeTempDir() {
  std::string pattern = (fs::temp_directory_path() / "tunebus-store-test-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return pattern;
}

// Bytes that would break a text-only store: NUL, 0xff, and the record's index.
inline std::string Record(const std::string& tag, int i) {
  return tag + '\0' + std::to_string(i) + "\xff\x01";
}

inline std::vector<char> Blob(size_t size, int seed) {
  std::vector<char> b(size);
  uint32_t x = 2463534242u + uint32_t(seed);
  for (auto& c : b) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;  // xorshift32: cheap, not constant
    c = char(x & 0xff);
  }
  return b;
}

// A DEALER peer that talks to the store synchronously (or pipelined, via Send/Receive).
class Peer {
 public:
  Peer(zmq::context_t& ctx, const std::string& endpoint) : socket_(ctx, zmq::socket_type::dealer) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.set(zmq::sockopt::sndhwm, 0);  // unlimited: tests pipeline thousands of requests
    socket_.set(zmq::sockopt::rcvhwm, 0);
    socket_.connect(endpoint);
  }

  void SendRaw(const std::string& bytes) {
    socket_.send(zmq::buffer(bytes), zmq::send_flags::none);
  }

  template <typename M>
  uint64_t Send(M m) {
    m.id = next_id_++;
    SendRaw(proto::Encode(m));
    return m.id;
  }

  proto::Decoded Receive(milliseconds timeout = milliseconds(10000)) {
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, timeout) == 0)
      throw std::runtime_error("the store did not answer in time");
    zmq::message_t frame;
    if (!socket_.recv(frame, zmq::recv_flags::dontwait)) throw std::runtime_error("recv failed");
    auto decoded = proto::Decode(frame.data(), frame.size());
    if (!decoded.ok())
      throw std::runtime_error("undecodable reply: " + decoded.status().ToString());
    return std::move(*decoded);
  }

  template <typename R>
  static R As(const proto::Decoded& d) {
    if (d.type() != R::kType) {
      std::string detail;
      if (auto e = d.As<proto::ErrorReply>(); e.ok() && d.type() == proto::ErrorReply::kType) {
        detail = ": " + e->code + ": " + e->message;
      }
      throw std::runtime_error(std::string("expected ") + R::kType + ", got " + d.type() + detail);
    }
    auto r = d.As<R>();
    if (!r.ok()) throw std::runtime_error(r.status().ToString());
    return std::move(*r);
  }

  /// Sends `request` and returns its reply, converted to R (throws on an ErrorReply).
  template <typename R, typename M>
  R Call(M request) {
    const uint64_t id = Send(std::move(request));
    proto::Decoded d = Receive();
    if (d.id() != id) throw std::runtime_error("reply id mismatch");
    return As<R>(d);
  }

  /// Sends `request` and returns the ErrorReply it must get.
  template <typename M>
  proto::ErrorReply CallExpectingError(M request) {
    return Call<proto::ErrorReply>(std::move(request));
  }

 private:
  zmq::socket_t socket_;
  uint64_t next_id_ = 1;
};

inline proto::JournalAppend Append(const std::string& experiment,
                                   std::vector<std::string> records) {
  proto::JournalAppend m;
  m.experiment = experiment;
  m.records = std::move(records);
  return m;
}

inline proto::JournalRead Read(const std::string& experiment, uint64_t from_seq,
                               uint32_t max_records = 1000) {
  proto::JournalRead m;
  m.experiment = experiment;
  m.from_seq = from_seq;
  m.max_records = max_records;
  return m;
}

inline proto::CheckpointPut Put(const std::string& id, uint32_t index, std::vector<char> data,
                                bool last, const std::string& metadata_json = "") {
  proto::CheckpointPut m;
  m.checkpoint_id = id;
  m.chunk_index = index;
  m.data = std::move(data);
  m.last = last;
  m.metadata_json = metadata_json;
  return m;
}

inline proto::CheckpointGet Get(const std::string& id, uint32_t index) {
  proto::CheckpointGet m;
  m.checkpoint_id = id;
  m.chunk_index = index;
  return m;
}

class CheckpointStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir(); }
  void TearDown() override {
    StopStore();
    fs::remove_all(dir_);
  }

  void StartStore(const std::string& endpoint = "tcp://127.0.0.1:0", bool run = true) {
    CheckpointStoreOptions options;
    options.endpoint = endpoint;
    options.data_dir = dir_;
    options.clock = clock_;
    options.file_system = file_system_;
    options.metrics.server = metrics_server_;
    auto created = CheckpointStore::Create(ctx_, options);
    if (!created.ok()) throw std::runtime_error("Create: " + created.status().ToString());
    store_ = std::move(*created);
    peer_ = std::make_unique<Peer>(ctx_, store_->endpoint());
    if (run) RunStore();
  }
  void RunStore() {
    thread_ = std::thread([s = store_.get()] { s->Run(); });
  }
  // Stops the loop (it polls with a 100 ms timeout, so this is bounded), joins, closes the DB.
  void StopStore() {
    peer_.reset();
    if (thread_.joinable()) {
      store_->Stop();
      thread_.join();
    }
    store_.reset();
  }
  void RestartStore() {
    StopStore();
    StartStore();
  }
  Peer& peer() { return *peer_; }
  std::vector<std::string> ReadAll(const std::string& experiment) {
    auto reply = peer().Call<proto::JournalReadReply>(Read(experiment, 1, 10000));
    EXPECT_TRUE(reply.end);
    return reply.records;
  }

  // What /healthz answers: the last line CheckHealth prints (its body; spdlog's lines from the
  // store's thread may come before it), "" when it is not 200.
  std::string Health() {
    testing::internal::CaptureStdout();
    const int exit_code = metrics::CheckHealth("127.0.0.1", metrics_server_->port());
    const std::string out = testing::internal::GetCapturedStdout();
    if (exit_code != 0 || out.empty()) return "";
    const size_t start = out.rfind('\n', out.size() - 2);
    return start == std::string::npos ? out : out.substr(start + 1);
  }
  proto::StoreStatusReply StoreStatus() {
    return peer().Call<proto::StoreStatusReply>(proto::StoreStatus{});
  }

  zmq::context_t ctx_;  // first: destroyed after every socket
  std::string dir_;
  ManualClock manual_clock_;  // for tests that set clock_ to it: outlives store_
  const Clock* clock_ = &Clock::Real();
  std::shared_ptr<rocksdb::FileSystem> file_system_;        // null: the real one
  std::shared_ptr<metrics::MetricsServer> metrics_server_;  // null: no metrics
  std::unique_ptr<CheckpointStore> store_;
  std::unique_ptr<Peer> peer_;
  std::thread thread_;
};

}  // namespace tunebus::store_test
