// Tests for the wire codec (proto/codec.hpp): every message round-trips, missing and unknown
// keys decode as msgpack-c's define_map would. Untrusted input: codec_untrusted_test.cpp.
#include "proto/codec.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "proto/control.hpp"
#include "proto/events.hpp"
#include "proto/resources.hpp"
#include "proto/store.hpp"
#include "proto/worker.hpp"
#include "tests/unit/codec_test_util.hpp"

namespace tunebus::proto {
namespace {

using codec_util::Bytes;
using codec_util::Packer;
using codec_util::PackStr;

// Encodes `m`, decodes it, checks the envelope and converts back; the re-encoded bytes must
// equal the original bytes (so every field survived).
template <typename M>
M RoundTrip(const M& m) {
  const std::string bytes = Encode(m);
  auto decoded = Decode(bytes.data(), bytes.size());
  EXPECT_TRUE(decoded.ok()) << M::kType << ": " << decoded.status().ToString();
  if (!decoded.ok()) return M{};
  EXPECT_EQ(decoded->type(), M::kType);
  EXPECT_EQ(decoded->version(), kProtocolVersion);
  EXPECT_EQ(decoded->id(), m.id);
  auto back = decoded->template As<M>();
  EXPECT_TRUE(back.ok()) << M::kType << ": " << back.status().ToString();
  if (!back.ok()) return M{};
  EXPECT_EQ(Encode(*back), bytes) << M::kType;
  return *back;
}

// ---- round trips -------------------------------------------------------------------------

TEST(CodecTest, WorkerMessagesRoundTrip) {
  // Every message of proto/worker.hpp with non-default fields survives encode + decode.
  RegisterWorker reg;
  reg.id = 7;
  reg.worker_id = "w-1";
  reg.hostname = "node-a";
  reg.running = {{"exp_00001", 3}, {"exp_00002", 1}};
  RegisterWorker reg2 = RoundTrip(reg);
  ASSERT_EQ(reg2.running.size(), 2u);
  EXPECT_EQ(reg2.running[0].trial_id, "exp_00001");
  EXPECT_EQ(reg2.running[0].attempt, 3);
  EXPECT_EQ(reg2.hostname, "node-a");

  RegisterWorkerAck ack;
  ack.id = 7;
  ack.stale_trials = {"exp_00009"};
  EXPECT_EQ(RoundTrip(ack).stale_trials, ack.stale_trials);

  StartTrial start;
  start.id = 1ull << 40;
  start.experiment = "exp";
  start.trial_id = "exp_00003";
  start.attempt = 2;
  start.config_json = R"({"lr":0.01,"name":"ü"})";
  start.trainable.command = {"python3", "train.py", "--flag"};
  start.trainable.builtin = "";
  start.trainable.working_dir = "/work/dir";
  start.trainable.env = {{"A", "1"}, {"B", "two"}};
  start.trial_dir = "/results/exp/exp_00003";
  start.gpu_ids = {"0", "3"};
  start.start_iteration = 12;
  start.working_dir_digest = std::string(64, 'f');
  StartTrial start2 = RoundTrip(start);
  EXPECT_EQ(start2.working_dir_digest, start.working_dir_digest);
  EXPECT_EQ(start2.trainable.command, start.trainable.command);
  EXPECT_EQ(start2.trainable.env, start.trainable.env);
  EXPECT_EQ(start2.config_json, start.config_json);
  EXPECT_EQ(start2.start_iteration, 12);
  EXPECT_EQ(start2.id, 1ull << 40);

  ReportResult rr;
  rr.trial_id = "exp_00003";
  rr.attempt = 2;
  rr.seq = 5;
  rr.metrics_json = R"({"loss":0.25})";
  rr.time_this_iter_s = 1.25;
  ReportResult rr2 = RoundTrip(rr);
  EXPECT_EQ(rr2.seq, 5);
  EXPECT_DOUBLE_EQ(rr2.time_this_iter_s, 1.25);

  Decision dec;
  dec.trial_id = "exp_00003";
  dec.attempt = 2;
  dec.seq = 5;
  dec.action = "stop";
  EXPECT_EQ(RoundTrip(dec).action, "stop");

  StopTrialRequest stop;
  stop.id = 99;
  stop.trial_id = "exp_00004";
  stop.attempt = 9;
  EXPECT_EQ(RoundTrip(stop).attempt, 9);

  TrialExited exited;
  exited.trial_id = "exp_00004";
  exited.attempt = 9;
  exited.ok = false;
  exited.exit_code = -9;
  exited.stopped = true;
  exited.error = "killed by signal 9";
  exited.stderr_tail = "Traceback...\nValueError\n";
  exited.last_seq = 17;
  TrialExited exited2 = RoundTrip(exited);
  EXPECT_FALSE(exited2.ok);
  EXPECT_EQ(exited2.exit_code, -9);
  EXPECT_TRUE(exited2.stopped);
  EXPECT_EQ(exited2.last_seq, 17);

  WorkerHeartbeat hb;
  hb.worker_id = "w-1";
  EXPECT_EQ(RoundTrip(hb).worker_id, "w-1");
}

TEST(CodecTest, CheckpointFailedRoundTripsWithTheStoresReason) {
  // checkpoint_failed carries the checkpoint the store refused and the store's error as the
  // worker got it; every field survives, the reason byte for byte.
  CheckpointFailed failed;
  failed.trial_id = "exp_00004";
  failed.attempt = 2;
  failed.checkpoint_id = "digits-3e962/exp_00004/00000007-a2";
  failed.training_iteration = 7;
  failed.error = "io_error: RocksDB write failed: IO error: No space left on device ü";
  const CheckpointFailed back = RoundTrip(failed);
  EXPECT_EQ(std::string(CheckpointFailed::kType), "checkpoint_failed");
  EXPECT_EQ(back.trial_id, failed.trial_id);
  EXPECT_EQ(back.attempt, 2);
  EXPECT_EQ(back.checkpoint_id, failed.checkpoint_id);
  EXPECT_EQ(back.training_iteration, 7);
  EXPECT_EQ(back.error, failed.error);
}

TEST(CodecTest, ResourceMessagesRoundTrip) {
  // Every message of proto/resources.hpp with non-default fields survives encode + decode.
  RegisterNode node;
  node.id = 3;
  node.worker_id = "w-2";
  node.hostname = "gpu-box";
  node.capacity = {{"cpu", 80000}, {"gpu", 20000}, {"memory", 17179869184ll * 10000}};
  node.gpu_ids = {"0", "1"};
  EXPECT_EQ(RoundTrip(node).capacity, node.capacity);

  RegisterNodeAck nack;
  nack.heartbeat_interval_ms = 250;
  EXPECT_EQ(RoundTrip(nack).heartbeat_interval_ms, 250);

  NodeHeartbeat nhb;
  nhb.worker_id = "w-2";
  RoundTrip(nhb);

  Allocate alloc;
  alloc.id = 11;
  alloc.trial_id = "exp_00000";
  alloc.attempt = 1;
  alloc.request = {{"cpu", 10000}, {"gpu", 3300}};
  EXPECT_EQ(RoundTrip(alloc).request, alloc.request);

  AllocateReply reply;
  reply.id = 11;
  reply.trial_id = "exp_00000";
  reply.attempt = 1;
  reply.granted = false;
  reply.worker_id = "";
  reply.gpu_ids = {"1"};
  reply.infeasible = true;
  reply.reason = "asked for gpu=8, the largest worker has gpu=2";
  AllocateReply reply2 = RoundTrip(reply);
  EXPECT_TRUE(reply2.infeasible);
  EXPECT_EQ(reply2.reason, reply.reason);

  Release rel;
  rel.trial_id = "exp_00000";
  rel.attempt = 4;
  EXPECT_EQ(RoundTrip(rel).attempt, 4);

  ReleaseReply relr;
  relr.released = true;
  EXPECT_TRUE(RoundTrip(relr).released);

  AllocateBatch batch;
  batch.items = {{"exp_00000", 1, {{"cpu", 10000}}}, {"exp_00001", 2, {{"gpu", 3300}}}};
  const AllocateBatch batch2 = RoundTrip(batch);
  ASSERT_EQ(batch2.items.size(), 2u);
  EXPECT_EQ(batch2.items[1].trial_id, "exp_00001");
  EXPECT_EQ(batch2.items[1].request, batch.items[1].request);

  AllocateBatchReply breply;
  breply.items.push_back({"exp_00000", 1, true, "w-1", {"0"}, false, ""});
  breply.items.push_back({"exp_00001", 2, false, "", {}, true, "too big"});
  const AllocateBatchReply breply2 = RoundTrip(breply);
  ASSERT_EQ(breply2.items.size(), 2u);
  EXPECT_EQ(breply2.items[0].worker_id, "w-1");
  EXPECT_TRUE(breply2.items[1].infeasible);

  ReleaseBatch rbatch;
  rbatch.items = {{"exp_00000", 1}, {"exp_00001", 2}};
  EXPECT_EQ(RoundTrip(rbatch).items[1].attempt, 2);
  ReleaseBatchReply rbreply;
  rbreply.released = {true, false};
  EXPECT_EQ(RoundTrip(rbreply).released, rbreply.released);

  GetClusterView gcv;
  gcv.id = 5;
  RoundTrip(gcv);

  ClusterView view;
  NodeView nv;
  nv.worker_id = "w-2";
  nv.hostname = "gpu-box";
  nv.alive = false;
  nv.capacity = {{"cpu", 40000}};
  nv.committed = {{"cpu", 10000}};
  nv.trials = {"exp_00000/1"};
  view.nodes = {nv, NodeView{}};
  ClusterView view2 = RoundTrip(view);
  ASSERT_EQ(view2.nodes.size(), 2u);
  EXPECT_FALSE(view2.nodes[0].alive);
  EXPECT_EQ(view2.nodes[0].committed, nv.committed);
  EXPECT_TRUE(view2.nodes[1].alive);

  NodeEvent ev;
  ev.event = "node_lost";
  ev.worker_id = "w-2";
  ev.trials = {"exp_00000/1", "exp_00001/2"};
  EXPECT_EQ(RoundTrip(ev).trials, ev.trials);
}

TEST(CodecTest, StoreMessagesRoundTripIncludingBinaryChunks) {
  // Every message of proto/store.hpp; checkpoint data is binary with NUL and 0xff bytes.
  JournalAppend app;
  app.id = 21;
  app.experiment = "exp";
  app.records = {std::string("\x00\x01\xff", 3), "plain", ""};
  JournalAppend app2 = RoundTrip(app);
  EXPECT_EQ(app2.records, app.records);

  JournalAppendAck aack;
  aack.experiment = "exp";
  aack.first_seq = 10;
  aack.last_seq = 12;
  EXPECT_EQ(RoundTrip(aack).last_seq, 12u);

  JournalAppendMany many;
  many.parts = {{"a", {std::string("\x00\x01", 2)}, 3}, {"b", {"x", "y"}, 0}};
  JournalAppendMany many2 = RoundTrip(many);
  ASSERT_EQ(many2.parts.size(), 2u);
  EXPECT_EQ(many2.parts[0].records, many.parts[0].records);
  EXPECT_EQ(many2.parts[0].expected_first_seq, 3u);
  EXPECT_EQ(many2.parts[1].experiment, "b");
  JournalAppendManyAck mack;
  mack.parts = {{"a", 4, 4, "", ""}, {"b", 0, 0, "failed_precondition", "fenced"}};
  JournalAppendManyAck mack2 = RoundTrip(mack);
  ASSERT_EQ(mack2.parts.size(), 2u);
  EXPECT_EQ(mack2.parts[0].last_seq, 4u);
  EXPECT_EQ(mack2.parts[1].error_code, "failed_precondition");

  JournalRead jr;
  jr.experiment = "exp";
  jr.from_seq = 77;
  jr.max_records = 10;
  EXPECT_EQ(RoundTrip(jr).max_records, 10u);

  JournalReadReply jrr;
  jrr.experiment = "exp";
  jrr.first_seq = 77;
  jrr.records = {"a", std::string(1, '\0')};
  jrr.end = false;
  JournalReadReply jrr2 = RoundTrip(jrr);
  EXPECT_EQ(jrr2.records, jrr.records);
  EXPECT_FALSE(jrr2.end);

  JournalList jl;
  RoundTrip(jl);
  JournalListReply jlr;
  jlr.experiments = {"a", "b"};
  jlr.last_seqs = {3, 18446744073709551615ull};
  EXPECT_EQ(RoundTrip(jlr).last_seqs, jlr.last_seqs);

  RoundTrip(StoreStatus{});
  StoreStatusReply ssr;
  ssr.state = "degraded";
  ssr.reason = "IO error: No space left on device";
  ssr.since_unix_s = 1795000000.25;
  ssr.recoveries = 3;
  const StoreStatusReply ssr2 = RoundTrip(ssr);
  EXPECT_EQ(ssr2.state, "degraded");
  EXPECT_EQ(ssr2.reason, ssr.reason);
  EXPECT_EQ(ssr2.since_unix_s, ssr.since_unix_s);
  EXPECT_EQ(ssr2.recoveries, 3u);

  CheckpointPut put;
  put.id = 8;
  put.checkpoint_id = "exp/exp_00000/ckpt_3";
  put.chunk_index = 2;
  put.data = {'\0', '\xff', 'a', '\0', '\x7f', '\x80', '\xff', '\0'};
  put.last = true;
  put.metadata_json = R"({"iteration":3})";
  CheckpointPut put2 = RoundTrip(put);
  EXPECT_EQ(put2.data, put.data);
  EXPECT_EQ(put2.data.size(), 8u);
  EXPECT_TRUE(put2.last);
  EXPECT_EQ(put2.chunk_index, 2u);

  CheckpointPutAck pack;
  pack.checkpoint_id = put.checkpoint_id;
  pack.chunk_index = 2;
  EXPECT_EQ(RoundTrip(pack).chunk_index, 2u);

  CheckpointGet get;
  get.checkpoint_id = put.checkpoint_id;
  get.chunk_index = 1;
  RoundTrip(get);

  CheckpointGetReply getr;
  getr.checkpoint_id = put.checkpoint_id;
  getr.chunk_index = 1;
  getr.num_chunks = 3;
  getr.data = std::vector<char>(1024, '\xff');
  getr.data[0] = '\0';
  getr.metadata_json = "{}";
  EXPECT_EQ(RoundTrip(getr).data, getr.data);

  CheckpointList cl;
  cl.prefix = "exp/exp_00000/";
  RoundTrip(cl);

  CheckpointListReply clr;
  CheckpointInfo info;
  info.checkpoint_id = "exp/exp_00000/ckpt_3";
  info.size_bytes = 5ull << 32;
  info.num_chunks = 1281;
  info.metadata_json = R"({"score":0.9})";
  clr.checkpoints = {info};
  CheckpointListReply clr2 = RoundTrip(clr);
  ASSERT_EQ(clr2.checkpoints.size(), 1u);
  EXPECT_EQ(clr2.checkpoints[0].size_bytes, 5ull << 32);

  CheckpointDelete del;
  del.checkpoint_id = info.checkpoint_id;
  RoundTrip(del);
  CheckpointDeleteAck dela;
  dela.checkpoint_id = info.checkpoint_id;
  dela.deleted = true;
  EXPECT_TRUE(RoundTrip(dela).deleted);
}

TEST(CodecTest, ControlAndEventMessagesRoundTrip) {
  // Every message of proto/control.hpp and proto/events.hpp, plus ErrorReply.
  SubmitExperiment sub;
  sub.id = 1;
  sub.spec_yaml = "name: digits\nparam_space:\n  lr: {loguniform: [0.0001, 0.1]}\n";
  sub.base_dir = "/home/u/exp";
  sub.source_name = "experiment.yaml";
  EXPECT_EQ(RoundTrip(sub).spec_yaml, sub.spec_yaml);

  ListTrials lt;
  lt.status = "RUNNING";
  EXPECT_EQ(RoundTrip(lt).status, "RUNNING");
  ShowTrial st;
  st.trial_id = "exp_00002";
  RoundTrip(st);
  StopTrialCommand stc;
  stc.trial_id = "exp_00002";
  RoundTrip(stc);
  StopExperiment se;
  se.id = 4;
  RoundTrip(se);
  GetExperiment ge;
  ge.id = 5;
  RoundTrip(ge);
  ListWorkers lw;
  lw.id = 6;
  RoundTrip(lw);
  ControlReply cr;
  cr.id = 6;
  cr.body_json = R"([{"worker_id":"w-1"}])";
  EXPECT_EQ(RoundTrip(cr).body_json, cr.body_json);
  // Read requests name an experiment (since v1.5); checkpoint chunks carry binary data.
  lt.experiment = "digits-3e962";
  EXPECT_EQ(RoundTrip(lt).experiment, "digits-3e962");
  ge.experiment = "digits";
  EXPECT_EQ(RoundTrip(ge).experiment, "digits");
  FetchCheckpoint fc;
  fc.id = 7;
  fc.experiment = "digits";
  fc.trial_id = "3e962_00004";
  fc.checkpoint_id = "00000020-a1";
  fc.chunk_index = 2;
  const FetchCheckpoint fc2 = RoundTrip(fc);
  EXPECT_EQ(fc2.checkpoint_id, fc.checkpoint_id);
  EXPECT_EQ(fc2.chunk_index, 2u);
  CheckpointChunk chunk;
  chunk.id = 7;
  chunk.checkpoint_id = "digits-3e962/3e962_00004/00000020-a1";
  chunk.num_chunks = 3;
  chunk.data = {'\0', '\1', '\xff'};
  const CheckpointChunk chunk2 = RoundTrip(chunk);
  EXPECT_EQ(chunk2.data, chunk.data);
  EXPECT_EQ(chunk2.num_chunks, 3u);

  SchedulerEvent ev;
  ev.event = "trial_status";
  ev.experiment = "exp";
  ev.trial_id = "exp_00002";
  ev.body_json = R"({"status":"ERROR"})";
  SchedulerEvent ev2 = RoundTrip(ev);
  EXPECT_EQ(ev2.event, "trial_status");
  EXPECT_EQ(ev2.body_json, ev.body_json);

  ErrorReply err;
  err.id = 9;
  err.code = "not_found";
  err.message = "no trial x";
  err.request_type = "show_trial";
  EXPECT_EQ(RoundTrip(err).request_type, "show_trial");
}

TEST(CodecTest, MakeErrorCarriesCodeNameMessageIdAndRequestType) {
  // MakeError fills an ErrorReply from a Status for request `id` of a given type.
  ErrorReply e = MakeError(Status::NotFound("no trial exp_00042"), 42, "show_trial");
  EXPECT_EQ(e.v, kProtocolVersion);
  EXPECT_EQ(e.type, "error");
  EXPECT_EQ(e.id, 42u);
  EXPECT_EQ(e.code, "not_found");
  EXPECT_EQ(e.message, "no trial exp_00042");
  EXPECT_EQ(e.request_type, "show_trial");
  ErrorReply back = RoundTrip(e);
  EXPECT_EQ(back.code, "not_found");
  EXPECT_EQ(MakeError(Status::FailedPrecondition("x"), 0, "").code, "failed_precondition");
  EXPECT_EQ(MakeError(Status::IoError("disk"), 1, "journal_append").code, "io_error");
}

TEST(CodecTest, MissingKeysKeepDefaultsAndUnknownKeysAreIgnored) {
  // A newer peer may add fields (ignored); an older one may omit them (struct defaults).
  msgpack::sbuffer buf;
  Packer p(buf);
  p.pack_map(5);
  PackStr(p, "v");
  p.pack(1);
  PackStr(p, "type");
  PackStr(p, "register_node_ack");
  PackStr(p, "id");
  p.pack(17);
  PackStr(p, "future_field");
  p.pack_array(2);
  p.pack(1);
  PackStr(p, "x");
  PackStr(p, "another");
  p.pack_map(1);
  PackStr(p, "k");
  p.pack(true);
  const std::string bytes = Bytes(buf);
  auto d = Decode(bytes.data(), bytes.size());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->id(), 17u);
  auto ack = d->As<RegisterNodeAck>();
  ASSERT_TRUE(ack.ok()) << ack.status().ToString();
  EXPECT_EQ(ack->heartbeat_interval_ms, 1000);  // the struct default
  EXPECT_EQ(ack->id, 17u);

  // The same frame as a different struct: only envelope fields are set.
  auto rr = d->As<ReportResult>();
  ASSERT_TRUE(rr.ok());
  EXPECT_EQ(rr->seq, 0);
  EXPECT_TRUE(rr->trial_id.empty());
}

TEST(CodecTest, ReportMetricsTravelAsANestedMsgpackMap) {
  // A worker's metrics go as a nested map (not bin or str): a client in another language reads
  // them as a map; the decoded field is a view of that map and re-encodes the same bytes; a
  // metrics value that is not a map fails the decode as any mistyped field.
  ReportResults batch;
  ResultItem item;
  item.trial_id = "t_00001";
  item.seq = 1;
  nlohmann::json::to_msgpack(nlohmann::json{{"loss", 0.25}, {"step", 3}}, item.metrics.bytes);
  batch.results.push_back(item);
  const std::string wire = Encode(batch);
  const msgpack::object_handle h = msgpack::unpack(wire.data(), wire.size());
  const msgpack::object& results = h.get().via.map.ptr[3].val;  // v, type, id, results
  ASSERT_EQ(results.type, msgpack::type::ARRAY);
  bool seen = false;
  for (const auto& kv : results.via.array.ptr[0].via.map) {
    if (kv.key.as<std::string>() != "metrics") continue;
    seen = true;
    EXPECT_EQ(kv.val.type, msgpack::type::MAP);
  }
  EXPECT_TRUE(seen);
  auto d = Decode(wire.data(), wire.size());
  ASSERT_TRUE(d.ok());
  auto back = d->As<ReportResults>();
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->results.at(0).metrics.decoded.type, msgpack::type::MAP);  // a view, not a copy
  EXPECT_EQ(back->results.at(0).metrics.Encoded(), item.metrics.bytes);

  ResultItem empty;  // no metrics: an empty map on the wire, no bytes after decoding
  const std::string packed = [&] {
    msgpack::sbuffer buf;
    msgpack::pack(buf, empty);
    return std::string(buf.data(), buf.size());
  }();
  ResultItem empty_back;
  const msgpack::object_handle empty_handle =
      msgpack::unpack(packed.data(), packed.size());  // outlives the view
  empty_handle.get().convert(empty_back);
  EXPECT_EQ(nlohmann::json::from_msgpack(empty_back.metrics.Encoded()), nlohmann::json::object());

  msgpack::sbuffer bad;
  msgpack::packer<msgpack::sbuffer> pk(bad);
  pk.pack_map(1);
  pk.pack(std::string("metrics"));
  pk.pack(std::string("{}"));
  ResultItem wrong;
  EXPECT_THROW(msgpack::unpack(bad.data(), bad.size()).get().convert(wrong), msgpack::type_error);
}

// The same fields declared with msgpack-c's own define_map, to compare decoders with.
struct ResultItemByMsgpack {
  std::string trial_id;
  int64_t attempt = 0;
  int64_t seq = 0;
  std::string metrics_json;
  double time_this_iter_s = 0;
  tunebus::proto::MsgpackMap metrics;
  MSGPACK_DEFINE_MAP(trial_id, attempt, seq, metrics_json, time_this_iter_s, metrics)
};

TEST(CodecTest, MapFieldsDecodesAsMsgpackDefineMapIncludingADuplicatedKey) {
  // TUNEBUS_DEFINE_MAP's decoder matches keys in place; on a map with a duplicated key (the
  // first counts), an unknown key and a missing field it gives what define_map gives.
  msgpack::sbuffer buf;
  Packer p(buf);
  p.pack_map(5);
  PackStr(p, "seq");
  p.pack(7);
  PackStr(p, "trial_id");
  PackStr(p, "t_00001");
  PackStr(p, "seq");
  p.pack(9);
  PackStr(p, "unknown");
  p.pack(true);
  PackStr(p, "time_this_iter_s");
  p.pack(0.25);
  const msgpack::object_handle h = msgpack::unpack(buf.data(), buf.size());
  ResultItem ours;
  ours.attempt = 3;  // missing on the wire: kept
  ResultItemByMsgpack theirs;
  theirs.attempt = 3;
  h.get().convert(ours);
  h.get().convert(theirs);
  EXPECT_EQ(ours.seq, 7);
  EXPECT_EQ(ours.seq, theirs.seq);
  EXPECT_EQ(ours.trial_id, theirs.trial_id);
  EXPECT_EQ(ours.attempt, theirs.attempt);
  EXPECT_EQ(ours.metrics_json, theirs.metrics_json);
  EXPECT_EQ(ours.time_this_iter_s, theirs.time_this_iter_s);
  EXPECT_EQ(ours.metrics.Encoded(), theirs.metrics.Encoded());
  // Packing is msgpack-c's: the same bytes.
  msgpack::sbuffer a, b;
  msgpack::pack(a, ours);
  msgpack::pack(b, theirs);
  EXPECT_EQ(std::string(a.data(), a.size()), std::string(b.data(), b.size()));
}

}  // namespace
}  // namespace tunebus::proto
