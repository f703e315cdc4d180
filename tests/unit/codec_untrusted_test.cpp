// Tests for the wire codec (proto/codec.hpp) on untrusted input: Decode and As<M> reject
// garbage, truncations, wrong versions, deep nesting, huge sizes and wrongly typed fields with
// the documented StatusCode, never a crash (DESIGN.md "Wire protocol").
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "proto/codec.hpp"
#include "proto/control.hpp"
#include "proto/resources.hpp"
#include "proto/store.hpp"
#include "proto/worker.hpp"
#include "tests/unit/codec_test_util.hpp"

namespace tunebus::proto {
namespace {

using codec_util::Bytes;
using codec_util::DecodeStatus;
using codec_util::Packer;
using codec_util::PackStr;

TEST(CodecTest, NonStringKeyIsRejectedByAsNotACrash) {
  // Field names are strings; a map with an integer key decodes (envelope intact) but cannot be
  // converted to a struct: As<M>() is InvalidArgument.
  msgpack::sbuffer buf;
  Packer p(buf);
  p.pack_map(4);
  PackStr(p, "v");
  p.pack(1);
  PackStr(p, "type");
  PackStr(p, "register_node_ack");
  PackStr(p, "id");
  p.pack(17);
  p.pack(5);
  p.pack(6);
  const std::string bytes = Bytes(buf);
  auto d = Decode(bytes.data(), bytes.size());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->type(), "register_node_ack");
  EXPECT_EQ(d->As<RegisterNodeAck>().status().code(), StatusCode::kInvalidArgument);
}

// ---- rejection of untrusted input -----------------------------------------------------

TEST(CodecTest, EmptyInputIsInvalidArgument) {
  // Zero bytes are not a message.
  EXPECT_EQ(Decode("", 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Decode(nullptr, 0).status().code(), StatusCode::kInvalidArgument);
}

TEST(CodecTest, GarbageIsInvalidArgument) {
  // Never-used msgpack bytes and seeded random buffers are rejected, never crash.
  EXPECT_EQ(DecodeStatus(std::string("\xc1\xc1\xc1", 3)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeStatus("hello world").code(), StatusCode::kInvalidArgument);
  std::mt19937 rng(1234);
  for (int i = 0; i < 2000; ++i) {
    std::string bytes(size_t(rng() % 64), '\0');
    for (char& c : bytes) c = char(rng() & 0xff);
    auto d = Decode(bytes.data(), bytes.size());
    EXPECT_FALSE(d.ok()) << i;
  }
}

TEST(CodecTest, CorruptedValidFramesNeverCrash) {
  // Flipping any single byte of a valid frame either decodes or fails with a Status.
  StartTrial m;
  m.trial_id = "exp_00001";
  m.attempt = 3;
  m.config_json = R"({"a":1})";
  m.trainable.command = {"python3", "x.py"};
  m.gpu_ids = {"0"};
  const std::string good = Encode(m);
  for (size_t i = 0; i < good.size(); ++i) {
    for (int flip : {0x01, 0x80, 0xff}) {
      std::string bad = good;
      bad[i] = char(uint8_t(bad[i]) ^ flip);
      auto d = Decode(bad.data(), bad.size());
      if (d.ok()) {
        auto s = d->As<StartTrial>();
        if (!s.ok()) {
          EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
        }
      } else {
        EXPECT_TRUE(d.status().code() == StatusCode::kInvalidArgument ||
                    d.status().code() == StatusCode::kFailedPrecondition)
            << d.status().ToString();
      }
    }
  }
}

TEST(CodecTest, EveryTruncationIsInvalidArgument) {
  // A frame cut at any length short of its end is rejected.
  ReportResult m;
  m.trial_id = "exp_00001";
  m.attempt = 1;
  m.seq = 3;
  m.metrics_json = R"({"loss":0.1})";
  const std::string bytes = Encode(m);
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto d = Decode(bytes.data(), n);
    ASSERT_FALSE(d.ok()) << n;
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument) << n;
  }
}

TEST(CodecTest, NonMapMessageIsInvalidArgument) {
  // A msgpack array (or scalar) is valid msgpack but not a message.
  msgpack::sbuffer buf;
  msgpack::pack(buf, std::vector<std::string>{"v", "type", "start_trial"});
  Status s = DecodeStatus(Bytes(buf));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("map"), std::string::npos) << s.message();
  msgpack::sbuffer scalar;
  msgpack::pack(scalar, 42);
  EXPECT_EQ(DecodeStatus(Bytes(scalar)).code(), StatusCode::kInvalidArgument);
}

TEST(CodecTest, MapWithoutStringTypeIsInvalidArgument) {
  // No `type`, or a `type` that is not a string, is InvalidArgument.
  {
    msgpack::sbuffer buf;
    Packer p(buf);
    p.pack_map(2);
    PackStr(p, "v");
    p.pack(1);
    PackStr(p, "id");
    p.pack(3);
    Status s = DecodeStatus(Bytes(buf));
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("type"), std::string::npos) << s.message();
  }
  {
    msgpack::sbuffer buf;
    Packer p(buf);
    p.pack_map(2);
    PackStr(p, "v");
    p.pack(1);
    PackStr(p, "type");
    p.pack(5);
    EXPECT_EQ(DecodeStatus(Bytes(buf)).code(), StatusCode::kInvalidArgument);
  }
  {
    msgpack::sbuffer buf;  // type as binary, not str
    Packer p(buf);
    p.pack_map(2);
    PackStr(p, "v");
    p.pack(1);
    PackStr(p, "type");
    p.pack_bin(5);
    p.pack_bin_body("error", 5);
    EXPECT_EQ(DecodeStatus(Bytes(buf)).code(), StatusCode::kInvalidArgument);
  }
  {
    msgpack::sbuffer buf;  // empty map
    Packer p(buf);
    p.pack_map(0);
    EXPECT_EQ(DecodeStatus(Bytes(buf)).code(), StatusCode::kInvalidArgument);
  }
}

// A map {v: <v>, type: "start_trial", id: 5}.
template <typename V>
std::string WithVersion(V v) {
  msgpack::sbuffer buf;
  Packer p(buf);
  p.pack_map(3);
  PackStr(p, "v");
  p.pack(v);
  PackStr(p, "type");
  PackStr(p, "start_trial");
  PackStr(p, "id");
  p.pack(5);
  return Bytes(buf);
}

TEST(CodecTest, WrongVersionIsFailedPrecondition) {
  // A frame of another protocol version is FailedPrecondition naming the type; no `v` is
  // InvalidArgument.
  Status s = DecodeStatus(WithVersion(2));
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("start_trial"), std::string::npos) << s.message();
  EXPECT_EQ(DecodeStatus(WithVersion(0)).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(DecodeStatus(WithVersion(uint64_t(1000000))).code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(DecodeStatus(WithVersion(1)).ok());
  EXPECT_EQ(DecodeStatus(WithVersion(std::string("1"))).code(), StatusCode::kInvalidArgument);

  msgpack::sbuffer buf;
  Packer p(buf);
  p.pack_map(1);
  PackStr(p, "type");
  PackStr(p, "start_trial");
  EXPECT_EQ(DecodeStatus(Bytes(buf)).code(), StatusCode::kInvalidArgument);
}

TEST(CodecTest, VersionThatTruncatesToCurrentIsStillRejected) {
  // v = 2^32 + 1 is not version 1: it must not be narrowed to int before the comparison.
  Status s = DecodeStatus(WithVersion(uint64_t((1ull << 32) + kProtocolVersion)));
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  Status s2 = DecodeStatus(WithVersion(uint64_t(0xffffffff00000000ull + kProtocolVersion)));
  EXPECT_EQ(s2.code(), StatusCode::kFailedPrecondition) << s2.ToString();
}

TEST(CodecTest, TrailingBytesAreInvalidArgument) {
  // One frame holds exactly one message: anything after it is rejected.
  WorkerHeartbeat hb;
  hb.worker_id = "w";
  const std::string bytes = Encode(hb);
  EXPECT_TRUE(DecodeStatus(bytes).ok());
  EXPECT_EQ(DecodeStatus(bytes + std::string(1, '\0')).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeStatus(bytes + bytes).code(), StatusCode::kInvalidArgument);
}

// {v: 1, type: "deep", payload: [[[...1...]]]} with `depth` nested arrays.
std::string Nested(int depth) {
  msgpack::sbuffer buf;
  Packer p(buf);
  p.pack_map(3);
  PackStr(p, "v");
  p.pack(1);
  PackStr(p, "type");
  PackStr(p, "deep");
  PackStr(p, "payload");
  for (int i = 0; i < depth; ++i) p.pack_array(1);
  p.pack(1);
  return Bytes(buf);
}

TEST(CodecTest, NestingDeeperThan32IsInvalidArgument) {
  // The depth limit bounds recursion on hostile input; moderate nesting still decodes.
  EXPECT_TRUE(DecodeStatus(Nested(8)).ok());
  EXPECT_EQ(DecodeStatus(Nested(40)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeStatus(Nested(100000)).code(), StatusCode::kInvalidArgument);
  std::string only_arrays(64, char(0x91));  // 64 nested fixarrays of one, no map at all
  only_arrays += char(0x01);
  EXPECT_EQ(DecodeStatus(only_arrays).code(), StatusCode::kInvalidArgument);
}

TEST(CodecTest, HugeDeclaredSizesAreRejectedByLimits) {
  // A few bytes declaring 4 G elements / bytes must fail on the limit, not allocate.
  const std::string array32("\xdd\xff\xff\xff\xff", 5);
  const std::string map32("\xdf\xff\xff\xff\xff", 5);
  const std::string str32("\xdb\xff\xff\xff\xff", 5);
  const std::string bin32("\xc6\xff\xff\xff\xff", 5);
  for (const std::string& head : {array32, map32, str32, bin32}) {
    EXPECT_EQ(DecodeStatus(head).code(), StatusCode::kInvalidArgument);
    // The same header as a field of an otherwise valid message.
    msgpack::sbuffer buf;
    Packer p(buf);
    p.pack_map(3);
    PackStr(p, "v");
    p.pack(1);
    PackStr(p, "type");
    PackStr(p, "journal_append");
    PackStr(p, "records");
    std::string bytes = Bytes(buf) + head;
    EXPECT_EQ(DecodeStatus(bytes).code(), StatusCode::kInvalidArgument);
  }
  // Just over the array limit, with every element present.
  msgpack::sbuffer buf;
  Packer p(buf);
  p.pack_array(uint32_t(kMaxArray + 1));
  for (size_t i = 0; i < kMaxArray + 1; ++i) p.pack_nil();
  EXPECT_EQ(DecodeStatus(Bytes(buf)).code(), StatusCode::kInvalidArgument);
}

TEST(CodecTest, WronglyTypedFieldIsInvalidArgumentNamingTheType) {
  // As<M>() on a frame whose field has the wrong msgpack type fails, naming the type.
  msgpack::sbuffer buf;
  Packer p(buf);
  p.pack_map(4);
  PackStr(p, "v");
  p.pack(1);
  PackStr(p, "type");
  PackStr(p, "start_trial");
  PackStr(p, "id");
  p.pack(2);
  PackStr(p, "attempt");
  PackStr(p, "seven");
  const std::string bytes = Bytes(buf);
  auto d = Decode(bytes.data(), bytes.size());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  auto m = d->As<StartTrial>();
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("start_trial"), std::string::npos) << m.status().message();

  // A nested struct of the wrong shape, and a list where a string is expected.
  msgpack::sbuffer buf2;
  Packer p2(buf2);
  p2.pack_map(4);
  PackStr(p2, "v");
  p2.pack(1);
  PackStr(p2, "type");
  PackStr(p2, "start_trial");
  PackStr(p2, "trainable");
  p2.pack(3);
  PackStr(p2, "trial_id");
  p2.pack_array(1);
  p2.pack(1);
  const std::string bytes2 = Bytes(buf2);
  auto d2 = Decode(bytes2.data(), bytes2.size());
  ASSERT_TRUE(d2.ok());
  EXPECT_EQ(d2->As<StartTrial>().status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tunebus::proto
