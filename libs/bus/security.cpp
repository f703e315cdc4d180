#include "libs/bus/security.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>

#include "libs/bus/socket.hpp"
#include "libs/bus/zap_authenticator.hpp"

namespace tunebus::bus {

namespace {

std::atomic<uint64_t> g_reload_requests{0};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "RequestReload must be signal-safe");

// The host of a tcp:// endpoint ("tcp://[::1]:5555" -> "::1"), or "".
std::string TcpHost(const std::string& endpoint) {
  constexpr std::string_view kTcp = "tcp://";
  if (endpoint.rfind(kTcp, 0) != 0) return "";
  std::string rest = endpoint.substr(kTcp.size());
  if (const size_t semi = rest.find(';'); semi != std::string::npos) rest = rest.substr(semi + 1);
  if (!rest.empty() && rest[0] == '[') {
    const size_t close = rest.find(']');
    return close == std::string::npos ? rest.substr(1) : rest.substr(1, close - 1);
  }
  const size_t colon = rest.rfind(':');
  return colon == std::string::npos ? rest : rest.substr(0, colon);
}

bool IsTcp(const std::string& endpoint) { return endpoint.rfind("tcp://", 0) == 0; }

}  // namespace

bool IsLocalEndpoint(const std::string& endpoint) {
  if (!IsTcp(endpoint)) return true;
  const std::string host = TcpHost(endpoint);
  return host.rfind("127.", 0) == 0 || host == "::1" || host == "localhost" || host == "lo";
}

std::shared_ptr<Security> Security::Plaintext() {
  static const std::shared_ptr<Security> plaintext(new Security(SecurityOptions{}));
  return plaintext;
}

Result<std::shared_ptr<Security>> Security::Load(const SecurityOptions& options,
                                                 std::string_view default_key_name) {
  std::shared_ptr<Security> s(new Security(options));
  if (options.keys_dir.empty()) {
    if (!options.authorized_keys.empty() || !options.key_name.empty())
      return Status::InvalidArgument(
          "--key-name and --authorized-keys need --keys-dir (the folder of this process's keys)");
    return s;
  }
  if (s->options_.key_name.empty()) s->options_.key_name = std::string(default_key_name);
  const CurveKeyPaths paths = KeyPathsOf(options.keys_dir, s->options_.key_name);
  auto own = ReadCurveKeyFile(paths.secret_file);
  if (!own.ok()) {
    if (own.status().code() == StatusCode::kIoError)
      return Status::FailedPrecondition(fmt::format(
          "{}; make this process's keypair with `tunectl keygen {} --role ROLE --dir {}`",
          own.status().message(), s->options_.key_name, options.keys_dir));
    return own.status();
  }
  if (own->secret_key.empty())
    return Status::InvalidArgument(fmt::format("{} holds no secret-key", paths.secret_file));
  s->own_ = std::move(own).value();
  s->authorized_dir_ = options.authorized_keys.empty()
                           ? (std::filesystem::path(options.keys_dir) / "authorized").string()
                           : options.authorized_keys;
  std::error_code ec;
  if (std::filesystem::is_directory(s->authorized_dir_, ec)) {
    if (Status st = s->ReloadAllowList(); !st.ok()) return st;
  }
  return s;
}

Security::Security(SecurityOptions options) : options_(std::move(options)) {}
Security::~Security() = default;

Status Security::ReloadAllowList() {
  auto list = AllowList::Load(authorized_dir_);
  if (!list.ok()) return list.status();
  auto loaded = std::make_shared<const AllowList>(std::move(list).value());
  const bool first = [&] {
    std::lock_guard lock(mu_);
    const bool was_empty = allow_list_ == nullptr;
    allow_list_ = loaded;
    return was_empty;
  }();
  spdlog::info("allow-list {} {}: {}", authorized_dir_, first ? "loaded" : "reloaded",
               loaded->Summary());
  return Status::Ok();
}

void Security::RequestReload() { g_reload_requests.fetch_add(1, std::memory_order_relaxed); }
uint64_t Security::ReloadRequests() { return g_reload_requests.load(std::memory_order_relaxed); }

bool Security::Find(const std::string& public_key, AllowedKey& out) const {
  std::lock_guard lock(mu_);
  if (!allow_list_) return false;
  const AllowedKey* found = allow_list_->Find(public_key);
  if (found == nullptr) return false;
  out = *found;
  return true;
}

std::string Security::KeyName(const std::string& public_key) const {
  AllowedKey entry;
  if (Find(public_key, entry)) return entry.name;
  return fmt::format("{}…", public_key.substr(0, 8));
}

Status Security::Authorize(const Incoming& in, RoleSet roles, std::string_view request) const {
  if (in.key.empty()) return Status::Ok();
  // Every message of a CURVE socket passes here: one lookup under the lock, no copy unless
  // the request is refused.
  std::lock_guard lock(mu_);
  const AllowedKey* entry = allow_list_ ? allow_list_->Find(in.key) : nullptr;
  if (entry == nullptr)
    return Status::Forbidden(
        fmt::format("key {}… is no longer in the allow-list", in.key.substr(0, 8)));
  if (!roles.Contains(entry->role))
    return Status::Forbidden(fmt::format("key {} has role {}; {} needs {}", entry->name,
                                         RoleName(entry->role), request, roles.ToString()));
  return Status::Ok();
}

Status Security::SecureBind(zmq::context_t& ctx, zmq::socket_t& socket, const std::string& endpoint,
                            const Domain& domain) {
  if (!IsTcp(endpoint)) return Status::Ok();
  if (!curve()) {
    if (IsLocalEndpoint(endpoint)) return Status::Ok();
    if (!insecure())
      return Status::FailedPrecondition(fmt::format(
          "refusing to bind {} ({}) without CURVE keys: anyone who reaches it could run commands "
          "on every worker. Make keys with `tunectl keygen` (docs/explanation/security.md) and "
          "pass "
          "--keys-dir, bind a loopback address, or pass --insecure to serve it unauthenticated",
          endpoint, domain.name));
    spdlog::warn(
        "INSECURE: {} ({}) is bound without authentication or encryption (--insecure): anyone "
        "who can reach it can submit experiments, and so run commands on every worker",
        endpoint, domain.name);
    return Status::Ok();
  }
  {
    std::lock_guard lock(mu_);
    if (!allow_list_)
      return Status::FailedPrecondition(fmt::format(
          "cannot serve {} with CURVE: no allow-list folder {} (put the public key files of the "
          "clients it accepts there, docs/explanation/security.md)",
          endpoint, authorized_dir_));
  }
  auto& zap = authenticators_[ctx.handle()];
  if (!zap) {
    auto started = ZapAuthenticator::Start(ctx, *this);
    if (!started.ok()) {
      authenticators_.erase(ctx.handle());
      return started.status();
    }
    zap = std::move(started).value();
  }
  zap->AddDomain(domain);
  try {
    socket.set(zmq::sockopt::curve_server, 1);
    socket.set(zmq::sockopt::curve_secretkey, own_.secret_key);
    socket.set(zmq::sockopt::zap_domain, domain.name);
  } catch (const zmq::error_t& e) {
    return Status::Internal(fmt::format("cannot make {} a CURVE server: {}", endpoint, e.what()));
  }
  return Status::Ok();
}

Result<std::string> Security::ServerPublicKey(const ServerKey& server) const {
  if (!server.public_key.empty()) {
    if (!IsZ85Key(server.public_key))
      return Status::InvalidArgument(
          fmt::format("the {}'s public key is not a CURVE key (40 Z85 characters)", server.name));
    return server.public_key;
  }
  {
    std::lock_guard lock(mu_);
    if (auto it = server_keys_.find(server.name); it != server_keys_.end()) return it->second;
  }
  const std::string file = KeyPathsOf(options_.keys_dir, server.name).public_file;
  auto key = ReadCurveKeyFile(file);
  if (!key.ok())
    return Status::FailedPrecondition(
        fmt::format("{}; a CURVE client needs the {}'s public key: copy {}.key from the host where "
                    "`tunectl keygen` made it into {}",
                    key.status().message(), server.name, server.name, options_.keys_dir));
  std::lock_guard lock(mu_);
  server_keys_[server.name] = key->public_key;
  return key->public_key;
}

Status Security::SecureConnect(zmq::socket_t& socket, const std::string& endpoint,
                               const ServerKey& server) const {
  if (!IsTcp(endpoint) || !curve()) return Status::Ok();
  auto server_key = ServerPublicKey(server);
  if (!server_key.ok()) return server_key.status();
  try {
    socket.set(zmq::sockopt::curve_serverkey, *server_key);
    socket.set(zmq::sockopt::curve_publickey, own_.public_key);
    socket.set(zmq::sockopt::curve_secretkey, own_.secret_key);
  } catch (const zmq::error_t& e) {
    return Status::Internal(fmt::format("cannot make {} a CURVE client: {}", endpoint, e.what()));
  }
  return Status::Ok();
}

}  // namespace tunebus::bus
