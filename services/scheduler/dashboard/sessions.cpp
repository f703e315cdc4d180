#include "services/scheduler/dashboard/sessions.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tunebus::dashboard {

Session SessionTable::Create(std::string token, const TokenClaims& claims) {
  Session s{RandomToken(32), RandomToken(32), std::move(token), claims};
  std::lock_guard<std::mutex> lock(mu_);
  while (sessions_.size() >= kMaxSessions) {
    auto first = std::min_element(sessions_.begin(), sessions_.end(), [](auto& a, auto& b) {
      return a.second.claims.expires_at < b.second.claims.expires_at;
    });
    sessions_.erase(first);
  }
  sessions_.emplace(s.id, s);
  return s;
}

std::optional<Session> SessionTable::Find(std::string_view id, int64_t now_unix_s) {
  if (id.empty()) return std::nullopt;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return std::nullopt;
  if (now_unix_s >= it->second.claims.expires_at) {
    sessions_.erase(it);
    return std::nullopt;
  }
  return it->second;
}

void SessionTable::Erase(std::string_view id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it != sessions_.end()) sessions_.erase(it);
}

size_t SessionTable::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.size();
}

std::string CookieValue(std::string_view header, std::string_view name) {
  while (!header.empty()) {
    const size_t end = header.find(';');
    std::string_view pair = header.substr(0, end);
    header = end == std::string_view::npos ? std::string_view() : header.substr(end + 1);
    while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
    const size_t eq = pair.find('=');
    if (eq != std::string_view::npos && pair.substr(0, eq) == name) {
      return std::string(pair.substr(eq + 1));
    }
  }
  return "";
}

std::string SessionCookie(std::string_view session_id, int64_t max_age_s) {
  return fmt::format("{}={}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}", kSessionCookie,
                     session_id, session_id.empty() ? 0 : std::max<int64_t>(max_age_s, 0));
}

Status CheckSameOrigin(const PostHeaders& h) {
  if (!h.origin.empty() && h.origin != "http://" + h.host) {
    return Status::Forbidden(
        fmt::format("cross-origin request refused (Origin {} is not http://{})",
                    h.origin.substr(0, 100), h.host.substr(0, 100)));
  }
  if (!h.sec_fetch_site.empty() && h.sec_fetch_site != "same-origin" &&
      h.sec_fetch_site != "none") {
    return Status::Forbidden(fmt::format("cross-origin request refused (Sec-Fetch-Site {})",
                                         h.sec_fetch_site.substr(0, 40)));
  }
  return Status::Ok();
}

Status CheckControlPost(const std::optional<Session>& session, const PostHeaders& h) {
  if (Status s = CheckSameOrigin(h); !s.ok()) return s;
  if (!session) {
    return Status::Forbidden(
        "not signed in: sign in with a login token from `tunectl dashboard-token`");
  }
  if (h.csrf.empty() || !SameSecret(h.csrf, session->csrf)) {
    return Status::Forbidden(fmt::format("missing or wrong CSRF token (header {})", kCsrfHeader));
  }
  if (session->claims.role != bus::Role::kOperator) {
    return Status::Forbidden(fmt::format(
        "signed in as a viewer ({}): only an operator's token may act", session->claims.name));
  }
  return Status::Ok();
}

void ActionLog::Add(nlohmann::json entry) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.push_back(std::move(entry));
  while (entries_.size() > kMaxEntries) entries_.pop_front();
}

nlohmann::json ActionLog::For(std::string_view experiment, size_t limit) const {
  nlohmann::json out = nlohmann::json::array();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = entries_.rbegin(); it != entries_.rend() && out.size() < limit; ++it) {
    if (it->value("experiment", std::string()) == experiment) out.push_back(*it);
  }
  return out;
}

}  // namespace tunebus::dashboard
