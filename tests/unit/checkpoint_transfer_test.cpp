// CheckpointTransfer (services/trial-worker): a folder of several chunks through the real
// CheckpointStore and back, and the bound on chunks in flight, against a ROUTER the test
// answers by hand.
#include "services/trial-worker/checkpoint_transfer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <fstream>
#include <optional>
#include <thread>

#include "libs/bus/domains.hpp"
#include "libs/bus/socket.hpp"
#include "proto/store.hpp"
#include "tests/unit/checkpoint_store_fixture.hpp"

namespace tunebus {
namespace {

namespace fs = std::filesystem;
using store_test::Blob;
using store_test::MakeTempDir;

void WriteFile(const fs::path& path, const std::vector<char>& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

std::vector<char> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A transfer on the test's own loop, through a DEALER to `endpoint`.
class Transfers {
 public:
  Transfers(zmq::context_t& ctx, const std::string& endpoint)
      : store_(loop_,
               std::move(bus::Connect(ctx, zmq::socket_type::dealer, endpoint,
                                      *bus::Security::Plaintext(), bus::kCheckpointStoreKey))
                   .value(),
               "checkpoint-store"),
        transfer_(loop_, store_) {}

  CheckpointTransfer& transfer() { return transfer_; }
  bus::EventLoop& loop() { return loop_; }
  /// Turns the loop until `done` holds a result (at most `timeout`).
  std::optional<Result<int64_t>> RunUntilDone(std::optional<Result<int64_t>>& done,
                                              std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (!done && std::chrono::steady_clock::now() < until) loop_.RunOnce(bus::Duration{10});
    return done;
  }

 private:
  bus::EventLoop loop_;
  bus::RequestClient store_;
  CheckpointTransfer transfer_;
};

class CheckpointTransferTest : public store_test::CheckpointStoreTest {};

TEST_F(CheckpointTransferTest, AFolderOfManyChunksRoundTripsThroughTheStore) {
  // 13 MiB in three files and a subfolder (four chunks of the tar stream) are uploaded, then
  // downloaded into another folder: every file comes back byte for byte.
  StartStore();
  const fs::path src = fs::path(dir_ + "-src"), dst = fs::path(dir_ + "-dst");
  WriteFile(src / "model.bin", Blob(9u << 20, 1));
  WriteFile(src / "optimizer" / "state.bin", Blob(4u << 20, 2));
  WriteFile(src / "meta.json", {'{', '}'});
  Transfers t(ctx_, store_->endpoint());
  std::optional<Result<int64_t>> uploaded, downloaded;
  t.transfer().Upload(src.string(), "e/t1/00000001-a1", {{"trial_id", "t1"}},
                      [&](Result<int64_t> bytes) { uploaded = std::move(bytes); });
  ASSERT_TRUE(t.RunUntilDone(uploaded, std::chrono::seconds(30)));
  ASSERT_TRUE(uploaded->ok()) << uploaded->status().ToString();
  EXPECT_GT(**uploaded, int64_t(13u << 20));
  t.transfer().Download("e/t1/00000001-a1", dst.string(),
                        [&](Result<int64_t> bytes) { downloaded = std::move(bytes); });
  ASSERT_TRUE(t.RunUntilDone(downloaded, std::chrono::seconds(30)));
  ASSERT_TRUE(downloaded->ok()) << downloaded->status().ToString();
  EXPECT_EQ(**downloaded, **uploaded);
  for (const char* file : {"model.bin", "optimizer/state.bin", "meta.json"}) {
    EXPECT_TRUE(ReadFile(dst / file) == ReadFile(src / file)) << file;
  }
  fs::remove_all(src);
  fs::remove_all(dst);
}

// The next checkpoint_put to reach `router` within `timeout`, with the routing id it came from.
std::optional<std::pair<std::string, proto::CheckpointPut>> ReceivePut(
    zmq::socket_t& router, std::chrono::milliseconds timeout) {
  zmq::pollitem_t item{router.handle(), 0, ZMQ_POLLIN, 0};
  bus::Incoming in;
  if (zmq::poll(&item, 1, timeout) == 0 || !bus::Receive(router, in)) return std::nullopt;
  auto decoded = proto::Decode(in.payload.data(), in.payload.size());
  EXPECT_TRUE(decoded.ok());
  auto put = decoded->As<proto::CheckpointPut>();
  EXPECT_TRUE(put.ok()) << put.status().ToString();
  return std::make_pair(in.peer(), std::move(*put));
}

TEST_F(CheckpointTransferTest, AtMostThreeChunksAreUnansweredAtATime) {
  // A 20 MiB folder against a store the test answers one chunk at a time, oldest first: the
  // upload keeps three chunks unanswered and sends the next only after an answer, in order,
  // until the committing chunk.
  const fs::path src = fs::path(dir_ + "-src");
  WriteFile(src / "model.bin", Blob(20u << 20, 3));
  zmq::socket_t router =
      std::move(bus::Bind(ctx_, zmq::socket_type::router, "inproc://window-store",
                          *bus::Security::Plaintext(), {"test", bus::RoleSet::Any()}))
          .value();
  Transfers t(ctx_, "inproc://window-store");
  std::optional<Result<int64_t>> uploaded;
  t.transfer().Upload(src.string(), "e/t1/00000002-a1", nlohmann::json::object(),
                      [&](Result<int64_t> bytes) { uploaded = std::move(bytes); });
  std::thread loop([&] { t.RunUntilDone(uploaded, std::chrono::seconds(30)); });
  struct Joiner {
    std::thread& thread;
    ~Joiner() {
      if (thread.joinable()) thread.join();  // after a failed assertion: the loop times out
    }
  } joiner{loop};
  std::deque<std::pair<std::string, proto::CheckpointPut>> unanswered;
  uint32_t received = 0;
  size_t most_unanswered = 0;
  bool committed = false;
  while (!committed) {
    // Up to 5 s for the window to fill (tar may be slow on a busy host), then 100 ms in which
    // no further chunk may come.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (unanswered.size() < size_t(CheckpointTransfer::kChunksInFlight) &&
           (unanswered.empty() || !unanswered.back().second.last) &&
           std::chrono::steady_clock::now() < until) {
      auto put = ReceivePut(router, std::chrono::milliseconds(50));
      if (!put) continue;
      EXPECT_EQ(put->second.chunk_index, received++);
      unanswered.push_back(std::move(*put));
    }
    if (auto extra = ReceivePut(router, std::chrono::milliseconds(100))) {
      FAIL() << "chunk " << extra->second.chunk_index << " came with "
             << CheckpointTransfer::kChunksInFlight << " unanswered";
    }
    ASSERT_FALSE(unanswered.empty()) << "no chunk came after " << received;
    most_unanswered = std::max(most_unanswered, unanswered.size());
    const auto& [peer, put] = unanswered.front();
    proto::CheckpointPutAck ack;
    ack.id = put.id;
    ack.checkpoint_id = put.checkpoint_id;
    ack.chunk_index = put.chunk_index;
    committed = put.last;
    ASSERT_TRUE(bus::SendTo(router, peer, proto::Encode(ack)));
    unanswered.pop_front();
  }
  loop.join();
  ASSERT_TRUE(uploaded.has_value());
  ASSERT_TRUE(uploaded->ok()) << uploaded->status().ToString();
  EXPECT_EQ(most_unanswered, size_t(CheckpointTransfer::kChunksInFlight));
  EXPECT_GE(received, 6u);  // 20 MiB and tar's headers: at least six 4 MiB chunks
  fs::remove_all(src);
}

}  // namespace
}  // namespace tunebus
