// MessageDispatcher (libs/service): a ROUTER's handler table, driven over inproc by a DEALER.
// Every message is counted; every drop (garbage, unknown type, a handler's refusal) is answered
// with the typed error echoing the request's id and type, and an error is never answered.
#include "libs/service/message_dispatcher.hpp"

#include <gtest/gtest.h>

#include "libs/bus/socket.hpp"
#include "proto/store.hpp"

namespace tunebus {
namespace {

using namespace std::chrono_literals;

class MessageDispatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    router_ = bus::Bind(ctx_, zmq::socket_type::router, "inproc://dispatcher",
                        *bus::Security::Plaintext(), {"test", bus::RoleSet::Any()})
                  .value();
    dealer_ = bus::Connect(ctx_, zmq::socket_type::dealer, "inproc://dispatcher",
                           *bus::Security::Plaintext(), {"test", ""})
                  .value();
  }
  // Sends `bytes`, dispatches what the router received, returns the reply (if any in 1 s).
  std::optional<proto::ErrorReply> Exchange(const std::string& bytes) {
    EXPECT_TRUE(bus::Send(dealer_, bytes));
    zmq::pollitem_t in_item{router_.handle(), 0, ZMQ_POLLIN, 0};
    EXPECT_EQ(zmq::poll(&in_item, 1, 1000ms), 1);
    bus::Incoming in;
    EXPECT_TRUE(bus::Receive(router_, in));
    dispatcher_.Dispatch(in);
    zmq::pollitem_t out_item{dealer_.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&out_item, 1, 200ms) == 0) return std::nullopt;
    bus::Incoming reply;
    EXPECT_TRUE(bus::Receive(dealer_, reply));
    auto d = proto::Decode(reply.payload.data(), reply.payload.size());
    EXPECT_TRUE(d.ok());
    auto e = d->As<proto::ErrorReply>();
    EXPECT_TRUE(e.ok()) << d->type();
    return e.ok() ? std::optional(*e) : std::nullopt;
  }

  // The reply is the ErrorReply (id, code, message, request_type).
  static void ExpectError(const std::optional<proto::ErrorReply>& reply, uint64_t id,
                          const std::string& code, const std::string& message,
                          const std::string& request_type) {
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->id, id);
    EXPECT_EQ(reply->code, code);
    EXPECT_EQ(reply->message, message);
    EXPECT_EQ(reply->request_type, request_type);
  }

  zmq::context_t ctx_;
  zmq::socket_t router_;
  zmq::socket_t dealer_;
  service::MessageDispatcher dispatcher_{{.reply_socket = &router_}};
};

TEST_F(MessageDispatcherTest, HandlesCountsAndAnswersEveryDropWithATypedError) {
  int handled = 0;
  dispatcher_.On(proto::JournalList::kType, [&](bus::Incoming&, const proto::Decoded& msg) {
    ++handled;
    return msg.id() == 7 ? Status::FailedPrecondition("not now") : Status::Ok();
  });
  proto::JournalList list;
  list.id = 1;
  EXPECT_FALSE(Exchange(proto::Encode(list)));  // handled: the handler answers (nothing here)
  list.id = 7;
  ExpectError(Exchange(proto::Encode(list)), 7, "failed_precondition", "not now", "journal_list");
  EXPECT_EQ(handled, 2);

  proto::JournalRead unknown;  // no handler for it
  unknown.id = 9;
  ExpectError(Exchange(proto::Encode(unknown)), 9, "invalid_argument",
              "unknown message type 'journal_read'", "journal_read");

  auto garbage = Exchange("\xc1 not msgpack");
  ASSERT_TRUE(garbage);
  EXPECT_EQ(garbage->code, "invalid_argument");

  proto::ErrorReply error;  // an error is never answered with an error
  error.id = 3;
  EXPECT_FALSE(Exchange(proto::Encode(error)));

  EXPECT_EQ(dispatcher_.counts(),
            (std::map<std::string, uint64_t>{
                {"journal_list", 2}, {"<unknown>", 1}, {"<malformed>", 1}, {"error", 1}}));
  EXPECT_EQ(dispatcher_.CountsSummary(), "<malformed>=1 <unknown>=1 error=1 journal_list=2");
}

}  // namespace
}  // namespace tunebus
