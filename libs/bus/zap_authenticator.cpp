#include "libs/bus/zap_authenticator.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <array>
#include <vector>

#include "libs/bus/security.hpp"

namespace tunebus::bus {

namespace {
constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";
constexpr auto kPoll = std::chrono::milliseconds(200);
constexpr auto kDropLogEvery = std::chrono::seconds(10);
}  // namespace

Result<std::unique_ptr<ZapAuthenticator>> ZapAuthenticator::Start(zmq::context_t& ctx,
                                                                  Security& security) {
  try {
    zmq::socket_t socket(ctx, zmq::socket_type::rep);
    socket.set(zmq::sockopt::linger, 0);
    socket.bind(kZapEndpoint);
    std::unique_ptr<ZapAuthenticator> zap(new ZapAuthenticator(std::move(socket), security));
    zap->thread_ = std::thread([raw = zap.get()] { raw->Run(); });
    return zap;
  } catch (const zmq::error_t& e) {
    return Status::Unavailable(fmt::format("cannot start the ZAP handler: {}", e.what()));
  }
}

ZapAuthenticator::ZapAuthenticator(zmq::socket_t socket, Security& security)
    : socket_(std::move(socket)), security_(security) {}

ZapAuthenticator::~ZapAuthenticator() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void ZapAuthenticator::AddDomain(const Domain& domain) {
  std::lock_guard lock(mu_);
  domains_[domain.name] = domain.roles;
}

void ZapAuthenticator::Run() {
  uint64_t reloads_seen = Security::ReloadRequests();
  while (!stop_) {
    std::array<zmq::pollitem_t, 1> items{{{socket_.handle(), 0, ZMQ_POLLIN, 0}}};
    try {
      zmq::poll(items.data(), items.size(), kPoll);
      if (items[0].revents & ZMQ_POLLIN) Answer();
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) break;  // the context ends: close the socket so it can
      spdlog::error("ZAP handler: {}", e.what());
    }
    if (const uint64_t requests = Security::ReloadRequests(); requests != reloads_seen) {
      reloads_seen = requests;
      if (Status s = security_.ReloadAllowList(); !s.ok())
        spdlog::error("SIGHUP: keeping the allow-list as it was: {}", s.message());
    }
  }
  socket_.close();
}

// RFC 27: version, request id, domain, address, routing id, mechanism, credentials...
void ZapAuthenticator::Answer() {
  std::vector<zmq::message_t> request;
  zmq::message_t frame;
  do {
    if (!socket_.recv(frame, zmq::recv_flags::dontwait)) break;
    request.emplace_back(std::move(frame));
  } while (request.back().more());
  const auto text = [&](size_t i) { return i < request.size() ? request[i].to_string() : ""; };
  std::string code = "400", why, user_id;
  const std::string domain = text(2), address = text(3), mechanism = text(5);
  std::string key_text = "(no key)";
  if (request.size() < 7 || text(0) != "1.0" || mechanism != "CURVE" || request[6].size() != 32) {
    why = fmt::format("its handshake is not CURVE (mechanism {})", mechanism);
  } else {
    std::array<char, 41> z85{};
    zmq_z85_encode(z85.data(), static_cast<const uint8_t*>(request[6].data()), 32);
    const std::string key = z85.data();
    key_text = security_.KeyName(key);
    RoleSet roles;
    bool known_domain = false;
    {
      std::lock_guard lock(mu_);
      auto it = domains_.find(domain);
      if (it != domains_.end()) known_domain = true, roles = it->second;
    }
    AllowedKey entry;
    if (!known_domain) {
      why = fmt::format("ZAP domain '{}' is not served here", domain);
    } else if (!security_.Find(key, entry)) {
      why = fmt::format("key {} is not in the allow-list {}", key_text, security_.authorized_dir());
    } else if (!roles.Contains(entry.role)) {
      why = fmt::format("key {} has role {}; {} needs {}", entry.name, RoleName(entry.role), domain,
                        roles.ToString());
    } else {
      code = "200";
      user_id = key;
    }
  }
  if (code == "200") {
    ++accepted_;
  } else {
    ++refused_;
    LogDrop(domain, address, key_text, why);
  }
  const std::string status_text = code == "200" ? "OK" : why;
  try {
    socket_.send(zmq::buffer(text(0)), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(text(1)), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(code), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(status_text), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(user_id), zmq::send_flags::sndmore);
    socket_.send(zmq::message_t(), zmq::send_flags::none);  // no metadata
  } catch (const zmq::error_t& e) {
    spdlog::error("ZAP handler cannot answer: {}", e.what());
  }
}

void ZapAuthenticator::LogDrop(const std::string& domain, const std::string& address,
                               const std::string& key, const std::string& why) {
  DropLog& log = drop_logs_[domain + '\n' + key];
  const auto now = std::chrono::steady_clock::now();
  if (log.last.time_since_epoch().count() != 0 && now - log.last < kDropLogEvery) {
    ++log.suppressed;
    return;
  }
  const std::string more =
      log.suppressed == 0 ? "" : fmt::format(" ({} more since the last line)", log.suppressed);
  spdlog::warn("Dropping connection to {} from {} because {}{}", domain, address, why, more);
  log.last = now;
  log.suppressed = 0;
}

}  // namespace tunebus::bus
