// The dashboard's sign-in sessions, CSRF checks and action log (docs/how-to/dashboard.md
// "Control").
//
// Signing in (/login) with a login token (dashboard/tokens.hpp) that the scheduler verified makes
// a Session: a random id (the HttpOnly, SameSite=Strict cookie kSessionCookie), a random CSRF
// token (synchronizer token: the page reads it from /api/session and sends it in the header
// kCsrfHeader with every POST), and the token itself, which every action carries to the
// scheduler (the scheduler, not the dashboard, decides that it grants operator). Sessions live in
// the dashboard's memory until their token expires, the user signs out, or the scheduler stops.
//
// Thread-safe: HTTP threads share one SessionTable and one ActionLog.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "libs/core/status.hpp"
#include "services/scheduler/dashboard/tokens.hpp"

namespace tunebus::dashboard {

inline constexpr std::string_view kSessionCookie = "tunebus_session";
inline constexpr std::string_view kCsrfHeader = "X-CSRF-Token";

struct Session {
  std::string id;     // the cookie's value: 32 random bytes, base64url
  std::string csrf;   // 32 random bytes, base64url
  std::string token;  // the login token it was made with
  TokenClaims claims;
};

class SessionTable {
 public:
  /// Sessions kept at most; a new one beyond drops the one that expires first.
  static constexpr size_t kMaxSessions = 1024;

  /// A new session for a verified token and its claims.
  Session Create(std::string token, const TokenClaims& claims);
  /// The session with cookie value `id` while its token has not expired (an expired one is
  /// dropped), or nullopt.
  std::optional<Session> Find(std::string_view id, int64_t now_unix_s);
  void Erase(std::string_view id);
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, Session, std::less<>> sessions_;  // by id; guarded by mu_
};

/// The value of cookie `name` in a Cookie header ("a=1; tunebus_session=xyz"), or "".
std::string CookieValue(std::string_view cookie_header, std::string_view name);

/// The Set-Cookie value that signs `session` in until `expires_at` (HttpOnly, SameSite=Strict,
/// Path=/, Max-Age), or, with an empty session id, the one that signs out (Max-Age=0).
std::string SessionCookie(std::string_view session_id, int64_t max_age_s);

/// What a POST that changes something must show besides its session (the request's headers).
struct PostHeaders {
  std::string host;            // Host
  std::string origin;          // Origin ("" when absent)
  std::string sec_fetch_site;  // Sec-Fetch-Site ("" when absent)
  std::string csrf;            // kCsrfHeader ("" when absent)
};

/// Ok when a POST is same-origin: its Origin (when sent) is http://<Host>, and its
/// Sec-Fetch-Site (when sent) is same-origin or none. Errors: Forbidden "cross-origin request
/// refused (...)".
Status CheckSameOrigin(const PostHeaders& h);

/// The session a control POST acts in: Ok when it is same-origin (CheckSameOrigin), signed in
/// (`session` set) and its CSRF header equals the session's token, and the session's role is
/// operator. Errors: Forbidden, naming which of these failed ("not signed in", "missing or wrong
/// CSRF token", "signed in as a viewer").
Status CheckControlPost(const std::optional<Session>& session, const PostHeaders& h);

/// The dashboard's recent actions, shown in the experiment page's action log.
class ActionLog {
 public:
  static constexpr size_t kMaxEntries = 500;
  /// Adds {time (unix s), who, role, action, experiment, trial_id, weight?, ok, result}.
  void Add(nlohmann::json entry);
  /// The entries whose experiment is `experiment` (as the page names it), newest first, at
  /// most `limit`.
  nlohmann::json For(std::string_view experiment, size_t limit) const;

 private:
  mutable std::mutex mu_;
  std::deque<nlohmann::json> entries_;  // oldest first; guarded by mu_
};

}  // namespace tunebus::dashboard
