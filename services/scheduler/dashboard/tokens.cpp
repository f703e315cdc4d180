#include "services/scheduler/dashboard/tokens.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <utility>

namespace tunebus::dashboard {

namespace {

void InitSodium() {
  // Idempotent and thread-safe; -1 only when the system has no source of randomness.
  if (sodium_init() < 0) std::abort();
}

std::string Hex(const unsigned char* data, size_t size) {
  std::string out(size * 2 + 1, '\0');
  sodium_bin2hex(out.data(), out.size(), data, size);
  out.pop_back();
  return out;
}

bool FromBase64Url(std::string_view text, std::string& out) {
  out.assign(text.size(), '\0');
  size_t size = 0;
  if (sodium_base642bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), text.data(),
                        text.size(), nullptr, &size, nullptr,
                        sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0) {
    return false;
  }
  out.resize(size);
  return true;
}

}  // namespace

std::string UtcDateTime(int64_t unix_s) {
  std::time_t t = std::time_t(unix_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string Base64Url(std::string_view data) {
  const int variant = sodium_base64_VARIANT_URLSAFE_NO_PADDING;
  std::string out(sodium_base64_ENCODED_LEN(data.size(), variant), '\0');
  sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(data.data()),
                    data.size(), variant);
  out.resize(std::strlen(out.c_str()));
  return out;
}

std::string RandomToken(size_t bytes) {
  InitSodium();
  std::string raw(bytes, '\0');
  randombytes_buf(raw.data(), raw.size());
  return Base64Url(raw);
}

Result<int64_t> ParseTokenTtl(std::string_view text) {
  const std::string given(text.substr(0, 40));
  const auto bad = [&] {
    return Status::InvalidArgument(
        fmt::format("--ttl '{}' is not a duration like 90s, 30m, 12h or 7d (at most 30d)", given));
  };
  if (text.empty()) return bad();
  // A unit suffix and its seconds; a bare number is seconds.
  constexpr std::pair<char, double> kUnits[] = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}};
  double unit = 1;
  for (const auto& [suffix, suffix_s] : kUnits) {
    if (text.back() == suffix) {
      unit = suffix_s;
      text.remove_suffix(1);
      break;
    }
  }
  const std::string number(text);
  char* end = nullptr;
  const double n = std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || !std::isfinite(n)) return bad();
  const double seconds = std::round(n * unit);
  if (!(seconds > 0) || seconds > double(LoginTokens::kMaxTtlS)) return bad();
  return int64_t(seconds);
}

bool SameSecret(std::string_view a, std::string_view b) {
  return a.size() == b.size() && sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

LoginTokens LoginTokens::InMemory() {
  InitSodium();
  LoginTokens t;
  crypto_auth_keygen(t.key_.data());
  return t;
}

Result<LoginTokens> LoginTokens::Load(const std::string& path) {
  InitSodium();
  LoginTokens t;
  t.path_ = path;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if ((st.st_mode & 077) != 0) {
      return Status::FailedPrecondition(fmt::format(
          "the dashboard's token secret {} can be read by others (mode {:o}); chmod 600 it", path,
          st.st_mode & 0777));
    }
    std::ifstream in(path);
    std::string hex;
    if (!in || !std::getline(in, hex)) {
      return Status::IoError(fmt::format("cannot read the dashboard's token secret {}", path));
    }
    size_t size = 0;
    if (hex.size() != 2 * t.key_.size() ||
        sodium_hex2bin(t.key_.data(), t.key_.size(), hex.data(), hex.size(), nullptr, &size,
                       nullptr) != 0 ||
        size != t.key_.size()) {
      return Status::InvalidArgument(fmt::format(
          "the dashboard's token secret {} does not hold 64 hex digits; delete it to make a new "
          "one (every login token made before then stops working)",
          path));
    }
    return t;
  }
  if (errno != ENOENT) {
    return Status::IoError(
        fmt::format("cannot read the dashboard's token secret {}: {}", path, std::strerror(errno)));
  }
  crypto_auth_keygen(t.key_.data());
  const std::string text = Hex(t.key_.data(), t.key_.size()) + "\n";
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  bool written =
      fd >= 0 && ::write(fd, text.data(), text.size()) == ssize_t(text.size()) && ::fsync(fd) == 0;
  const int err = errno;
  if (fd >= 0) ::close(fd);
  if (written && ::rename(tmp.c_str(), path.c_str()) != 0) written = false;
  if (!written) {
    ::unlink(tmp.c_str());
    return Status::IoError(fmt::format("cannot write the dashboard's token secret {}: {}", path,
                                       std::strerror(err ? err : errno)));
  }
  return t;
}

Status LoginTokens::CheckClaims(const TokenClaims& c) {
  if (c.role != bus::Role::kViewer && c.role != bus::Role::kOperator) {
    return Status::InvalidArgument(fmt::format(
        "a dashboard token's role is viewer or operator, not {}", bus::RoleName(c.role)));
  }
  if (c.name.empty() || c.name.size() > kMaxNameBytes) {
    return Status::InvalidArgument(
        fmt::format("a dashboard token's name has 1 to {} bytes", kMaxNameBytes));
  }
  for (unsigned char ch : c.name) {
    if (ch < 0x20 || ch == 0x7f) {
      return Status::InvalidArgument("a dashboard token's name has no control characters");
    }
  }
  if (c.expires_at <= c.issued_at || c.expires_at - c.issued_at > kMaxTtlS) {
    return Status::InvalidArgument(fmt::format(
        "a dashboard token is valid for more than 0 s and at most {} s (30 days)", kMaxTtlS));
  }
  return Status::Ok();
}

std::string LoginTokens::Issue(const TokenClaims& c) const {
  unsigned char jti[9];
  randombytes_buf(jti, sizeof jti);
  const nlohmann::json claims = {{"v", 1},
                                 {"name", c.name},
                                 {"role", std::string(bus::RoleName(c.role))},
                                 {"iat", c.issued_at},
                                 {"exp", c.expires_at},
                                 {"jti", Hex(jti, sizeof jti)}};
  const std::string payload = claims.dump();
  unsigned char tag[crypto_auth_BYTES];
  crypto_auth(tag, reinterpret_cast<const unsigned char*>(payload.data()), payload.size(),
              key_.data());
  return std::string(kPrefix) + Base64Url(payload) + "." +
         Base64Url(std::string_view(reinterpret_cast<const char*>(tag), sizeof tag));
}

Result<TokenClaims> LoginTokens::Verify(std::string_view token, int64_t now_unix_s) const {
  const Status malformed = Status::InvalidArgument(
      "not a dashboard login token (make one with `tunectl dashboard-token`)");
  if (!token.starts_with(kPrefix) || token.size() > 2048) return malformed;
  token.remove_prefix(kPrefix.size());
  const size_t dot = token.find('.');
  if (dot == std::string_view::npos) return malformed;
  std::string payload, tag;
  if (!FromBase64Url(token.substr(0, dot), payload) || !FromBase64Url(token.substr(dot + 1), tag)) {
    return malformed;
  }
  if (tag.size() != crypto_auth_BYTES ||
      crypto_auth_verify(reinterpret_cast<const unsigned char*>(tag.data()),
                         reinterpret_cast<const unsigned char*>(payload.data()), payload.size(),
                         key_.data()) != 0) {
    return Status::Forbidden(
        "the login token does not verify: it was changed, or made by another scheduler or "
        "before this scheduler's token secret changed");
  }
  const nlohmann::json claims = nlohmann::json::parse(payload, nullptr, false);
  TokenClaims c;
  try {
    if (!claims.is_object() || claims.value("v", 0) != 1) return malformed;
    c.name = claims.at("name").get<std::string>();
    const auto role = bus::ParseRole(claims.at("role").get<std::string>());
    if (!role) return malformed;
    c.role = *role;
    c.issued_at = claims.at("iat").get<int64_t>();
    c.expires_at = claims.at("exp").get<int64_t>();
  } catch (const nlohmann::json::exception&) {
    return malformed;
  }
  if (now_unix_s >= c.expires_at) {
    return Status::Forbidden(fmt::format(
        "the login token of {} expired at {}; make a new one with `tunectl dashboard-token`",
        c.name, UtcDateTime(c.expires_at)));
  }
  return c;
}

}  // namespace tunebus::dashboard
