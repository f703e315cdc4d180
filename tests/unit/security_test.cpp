// libs/bus security: key files (tunectl keygen's format), the allow-list, roles, the bind
// policy, and CURVE end to end over loopback TCP in one process: a key in the allow-list gets
// through with its key on every message, an unknown key and a plaintext client get nothing, a
// role outside the socket's domain is refused at the handshake, and a key removed from the folder
// is refused at its next request once the allow-list is reloaded.
#include "libs/bus/security.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "libs/bus/allow_list.hpp"
#include "libs/bus/curve_keys.hpp"
#include "libs/bus/identity_keys.hpp"
#include "libs/bus/socket.hpp"

namespace tunebus::bus {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/tunebus-security-test-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(CurveKeyFileTest, KeygenWritesAPairThatReadsBackWithItsRoleAndSecretMode0600) {
  TempDir dir;
  auto paths = WriteCurveKeyPair(dir.path() + "/keys", "alice", Role::kOperator);
  ASSERT_TRUE(paths.ok()) << paths.status().ToString();
  struct stat st {};
  ASSERT_EQ(::stat(paths->secret_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((dir.path() + "/keys").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  auto secret = ReadCurveKeyFile(paths->secret_file);
  ASSERT_TRUE(secret.ok()) << secret.status().ToString();
  auto pub = ReadCurveKeyFile(paths->public_file);
  ASSERT_TRUE(pub.ok()) << pub.status().ToString();
  EXPECT_EQ(secret->name, "alice");
  EXPECT_EQ(secret->role, "operator");
  EXPECT_EQ(secret->public_key, pub->public_key);
  EXPECT_TRUE(IsZ85Key(secret->secret_key));
  EXPECT_TRUE(pub->secret_key.empty());
  // Never overwritten by accident.
  auto again = WriteCurveKeyPair(dir.path() + "/keys", "alice", Role::kOperator);
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(WriteCurveKeyPair(dir.path() + "/keys", "alice", Role::kViewer, true).ok());
  EXPECT_EQ(ReadCurveKeyFile(paths->secret_file)->role, "viewer");
}

TEST(CurveKeyFileTest, ASecretKeyReadableByOthersIsRefusedNamingTheMode) {
  TempDir dir;
  auto paths = WriteCurveKeyPair(dir.path(), "bob", Role::kViewer);
  ASSERT_TRUE(paths.ok());
  ASSERT_EQ(::chmod(paths->secret_file.c_str(), 0644), 0);
  auto read = ReadCurveKeyFile(paths->secret_file);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("mode 0644"), std::string::npos)
      << read.status().message();
  EXPECT_NE(read.status().message().find("chmod 600"), std::string::npos);
  ASSERT_EQ(::chmod(paths->secret_file.c_str(), 0640), 0);
  EXPECT_FALSE(ReadCurveKeyFile(paths->secret_file).ok());
}

TEST(CurveKeyFileTest, MalformedFilesNameTheFileAndLine) {
  TempDir dir;
  const std::string path = dir.path() + "/x.key";
  std::ofstream(path) << "metadata\n    role = \"viewer\"\ncurve\n    public-key = \"tooshort\"\n";
  auto read = ReadCurveKeyFile(path);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().message(),
            path + ":4: public-key is not a CURVE key (40 Z85 characters)");
  std::ofstream(path) << "curve\n";
  EXPECT_EQ(ReadCurveKeyFile(path).status().message(), path + ": no public-key line");
  EXPECT_EQ(ReadCurveKeyFile(dir.path() + "/missing.key").status().code(), StatusCode::kIoError);
  EXPECT_EQ(WriteCurveKeyPair(dir.path(), "../evil", Role::kViewer).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(AllowListTest, LoadsEveryPublicKeyWithItsRoleAndRefusesOneWithout) {
  TempDir dir;
  auto a = WriteCurveKeyPair(dir.path(), "alice", Role::kOperator);
  auto w = WriteCurveKeyPair(dir.path(), "worker-1", Role::kWorker);
  ASSERT_TRUE(a.ok() && w.ok());
  const std::string allowed = dir.path() + "/authorized";
  ASSERT_TRUE(WritePublicKeyFile(allowed, *ReadCurveKeyFile(a->public_file)).ok());
  ASSERT_TRUE(WritePublicKeyFile(allowed, *ReadCurveKeyFile(w->public_file)).ok());
  auto list = AllowList::Load(allowed);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(list->size(), 2u);
  EXPECT_EQ(list->Summary(), "2 keys: alice (operator), worker-1 (worker)");
  const AllowedKey* alice = list->Find(ReadCurveKeyFile(a->public_file)->public_key);
  ASSERT_NE(alice, nullptr);
  EXPECT_EQ(alice->role, Role::kOperator);
  EXPECT_EQ(list->Find("nope"), nullptr);

  CurveKeyFile no_role = *ReadCurveKeyFile(a->public_file);
  no_role.name = "norole";
  no_role.role.clear();
  ASSERT_TRUE(WritePublicKeyFile(allowed, no_role).ok());
  auto refused = AllowList::Load(allowed);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("norole.key: no role"), std::string::npos)
      << refused.status().message();
  EXPECT_EQ(AllowList::Load(dir.path() + "/none").status().code(), StatusCode::kIoError);
}

TEST(RoleTest, NamesParseAndSetsPrintTheRolesARequestNeeds) {
  for (Role r : {Role::kViewer, Role::kOperator, Role::kWorker, Role::kService, Role::kSearcher})
    EXPECT_EQ(ParseRole(RoleName(r)), r);
  EXPECT_FALSE(ParseRole("admin"));
  EXPECT_EQ(kViewers.ToString(), "viewer or operator");
  EXPECT_EQ(kOperators.ToString(), "operator");
  EXPECT_TRUE(RoleSet::Any().Contains(Role::kSearcher));
  EXPECT_FALSE(kOperators.Contains(Role::kViewer));
}

TEST(BindPolicyTest, OnlyLoopbackAndLocalEndpointsArePlaintextByDefault) {
  EXPECT_TRUE(IsLocalEndpoint("tcp://127.0.0.1:5555"));
  EXPECT_TRUE(IsLocalEndpoint("tcp://127.3.2.1:*"));
  EXPECT_TRUE(IsLocalEndpoint("tcp://[::1]:5555"));
  EXPECT_TRUE(IsLocalEndpoint("tcp://localhost:5555"));
  EXPECT_TRUE(IsLocalEndpoint("ipc:///tmp/x"));
  EXPECT_TRUE(IsLocalEndpoint("inproc://x"));
  EXPECT_FALSE(IsLocalEndpoint("tcp://0.0.0.0:5555"));
  EXPECT_FALSE(IsLocalEndpoint("tcp://*:5555"));
  EXPECT_FALSE(IsLocalEndpoint("tcp://10.0.0.2:5555"));
  EXPECT_FALSE(IsLocalEndpoint("tcp://eth0:5555"));

  zmq::context_t ctx;
  auto refused = Bind(ctx, zmq::socket_type::router, "tcp://0.0.0.0:0", *Security::Plaintext(),
                      {"control", kViewers});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("refusing to bind tcp://0.0.0.0:0 (control) without "
                                            "CURVE keys"),
            std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find("--insecure"), std::string::npos);
  auto insecure = Security::Load({.insecure = true}, "scheduler");
  ASSERT_TRUE(insecure.ok());
  EXPECT_TRUE(
      Bind(ctx, zmq::socket_type::router, "tcp://0.0.0.0:0", **insecure, {"control", kViewers})
          .ok());
  EXPECT_TRUE(Bind(ctx, zmq::socket_type::router, "tcp://127.0.0.1:0", *Security::Plaintext(),
                   {"control", kViewers})
                  .ok());
}

TEST(IdentityKeysTest, AnIdentityBelongsToTheFirstKeyThatUsedIt) {
  IdentityKeys ids;
  EXPECT_TRUE(ids.Claim("w1", "KEY-A").ok());
  EXPECT_TRUE(ids.Claim("w1", "KEY-A").ok());
  const Status other = ids.Claim("w1", "KEY-B");
  EXPECT_EQ(other.code(), StatusCode::kForbidden);
  EXPECT_NE(other.message().find("worker w1 belongs to key KEY-A"), std::string::npos);
  EXPECT_TRUE(ids.Claim("w2", "").ok());  // plaintext: nothing is bound
  EXPECT_TRUE(ids.Claim("w2", "KEY-B").ok());
}

// A CURVE server (a ROUTER of domain "control" admitting viewers and operators) and clients
// over loopback TCP, with keys made as tunectl keygen makes them.
class CurveEndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    keys_ = dir_.path() + "/keys";
    for (auto [name, role] :
         std::vector<std::pair<std::string, Role>>{{"scheduler", Role::kService},
                                                   {"alice", Role::kOperator},
                                                   {"viewer", Role::kViewer},
                                                   {"worker", Role::kWorker}}) {
      auto paths = WriteCurveKeyPair(keys_, name, role);
      ASSERT_TRUE(paths.ok()) << paths.status().ToString();
      ASSERT_TRUE(
          WritePublicKeyFile(keys_ + "/authorized", *ReadCurveKeyFile(paths->public_file)).ok());
    }
    ASSERT_TRUE(WriteCurveKeyPair(keys_, "stranger", Role::kOperator).ok());  // not authorized
    auto server = Security::Load({.keys_dir = keys_}, "scheduler");
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_security_ = *server;
    auto router = Bind(ctx_, zmq::socket_type::router, "tcp://127.0.0.1:*", *server_security_,
                       {"control", kViewers});
    ASSERT_TRUE(router.ok()) << router.status().ToString();
    router_ = std::move(*router);
    endpoint_ = BoundEndpoint(router_);
  }

  // A DEALER with key `name` (or plaintext for "") that sends "hi".
  zmq::socket_t Client(const std::string& name) {
    std::shared_ptr<Security> security = Security::Plaintext();
    if (!name.empty()) {
      auto loaded = Security::Load({.keys_dir = keys_, .key_name = name}, name);
      EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
      security = *loaded;
      clients_.push_back(security);
    }
    auto s = Connect(ctx_, zmq::socket_type::dealer, "tcp://" + endpoint_.substr(6), *security,
                     {"scheduler", ""});
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_TRUE(Send(*s, "hi"));
    return std::move(*s);
  }

  // The next message on the router within `wait`, or nullopt.
  std::optional<Incoming> Next(std::chrono::milliseconds wait) {
    zmq::pollitem_t item{router_.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, wait) == 0) return std::nullopt;
    Incoming in;
    if (!Receive(router_, in)) return std::nullopt;
    return in;
  }

  TempDir dir_;
  std::string keys_;
  zmq::context_t ctx_;
  std::shared_ptr<Security> server_security_;
  std::vector<std::shared_ptr<Security>> clients_;
  zmq::socket_t router_;
  std::string endpoint_;
};

TEST_F(CurveEndToEndTest, AnAllowedKeyGetsThroughAndEachMessageCarriesIt) {
  zmq::socket_t alice = Client("alice");
  auto in = Next(3000ms);
  ASSERT_TRUE(in.has_value());
  EXPECT_EQ(in->payload.to_string(), "hi");
  EXPECT_EQ(in->key, clients_.back()->own_key().public_key);
  EXPECT_EQ(server_security_->KeyName(in->key), "alice");
  EXPECT_TRUE(server_security_->Authorize(*in, kOperators, "stop_experiment").ok());
}

TEST_F(CurveEndToEndTest, UnknownKeysPlaintextClientsAndRolesOutsideTheDomainGetNothing) {
  zmq::socket_t stranger = Client("stranger");
  zmq::socket_t plaintext = Client("");
  zmq::socket_t worker = Client("worker");  // the control domain admits viewers and operators
  EXPECT_FALSE(Next(700ms).has_value());
  zmq::socket_t viewer = Client("viewer");  // the server still serves the allowed
  auto in = Next(3000ms);
  ASSERT_TRUE(in.has_value());
  const Status refused = server_security_->Authorize(*in, kOperators, "stop_experiment");
  EXPECT_EQ(refused.code(), StatusCode::kForbidden);
  EXPECT_EQ(refused.message(), "key viewer has role viewer; stop_experiment needs operator");
}

TEST_F(CurveEndToEndTest, AKeyRemovedFromTheFolderIsRefusedAfterTheReload) {
  zmq::socket_t alice = Client("alice");
  auto in = Next(3000ms);
  ASSERT_TRUE(in.has_value());
  ASSERT_TRUE(server_security_->Authorize(*in, kViewers, "list_trials").ok());
  fs::remove(keys_ + "/authorized/alice.key");
  ASSERT_TRUE(server_security_->ReloadAllowList().ok());
  const Status refused = server_security_->Authorize(*in, kViewers, "list_trials");
  EXPECT_EQ(refused.code(), StatusCode::kForbidden);
  EXPECT_NE(refused.message().find("is no longer in the allow-list"), std::string::npos);
  // A broken folder keeps the list it had.
  std::ofstream(keys_ + "/authorized/broken.key") << "garbage\n";
  EXPECT_FALSE(server_security_->ReloadAllowList().ok());
  AllowedKey viewer;
  EXPECT_TRUE(server_security_->Find(ReadCurveKeyFile(keys_ + "/viewer.key")->public_key, viewer));
}

TEST_F(CurveEndToEndTest, AClientWithoutTheServersPublicKeySaysWhichFileIsMissing) {
  fs::remove(keys_ + "/scheduler.key");
  auto loaded = Security::Load({.keys_dir = keys_, .key_name = "alice"}, "alice");
  ASSERT_TRUE(loaded.ok());
  auto s =
      Connect(ctx_, zmq::socket_type::dealer, "tcp://127.0.0.1:1", **loaded, {"scheduler", ""});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("scheduler.key"), std::string::npos) << s.status().message();
  auto no_key = Security::Load({.keys_dir = keys_, .key_name = "nobody"}, "nobody");
  ASSERT_FALSE(no_key.ok());
  EXPECT_NE(no_key.status().message().find("tunectl keygen nobody"), std::string::npos)
      << no_key.status().message();
}

}  // namespace
}  // namespace tunebus::bus
