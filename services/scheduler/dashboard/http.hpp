// The dashboard's HTTP answers and the Router its route groups register their handlers on,
// shared by the files of dashboard/routes/ (experiment, trial, control, analysis and event
// routes). Defined in dashboard/server.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "libs/core/status.hpp"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace tunebus::dashboard {

/// The HTTP status of an error: 400 InvalidArgument, 403 Forbidden, 404 NotFound, 409
/// FailedPrecondition (e.g. resuming a finished experiment), 503 Unavailable, else 500.
int HttpStatusOf(const Status& s);

/// `body` as application/json, not cached (invalid UTF-8 replaced by U+FFFD).
void SendJson(httplib::Response& res, const nlohmann::json& body);

/// {"error": message} with HttpStatusOf(s).
void SendError(httplib::Response& res, const Status& s);

/// The embedded file `name` (dashboard/assets.hpp) with its Content-Type; 404 text if absent.
/// A page (.html) is sent as PageWithVersion makes it.
void SendAsset(httplib::Response& res, std::string_view name);

/// `page` with its footer's kVersionMark replaced by this build's "0.1.0 (commit abc1234)"
/// (libs/core/version.hpp); `page` as it is without the mark.
std::string PageWithVersion(std::string_view page);
inline constexpr std::string_view kVersionMark = "{{tunebus_version}}";

/// The query parameter `name` as an integer: `fallback` when absent, -1 when it is not an
/// integer (the caller's checks refuse it).
int64_t IntParam(const httplib::Request& req, const char* name, int64_t fallback);

/// Where a route group (dashboard/routes/) registers its handlers: the dashboard's HTTP server.
/// A pattern is a regular expression over the whole path; its groups are req.matches[i]. The
/// handlers run on httplib's threads, several at once.
class Router {
 public:
  /// A route's handler: it answers `req` in `res` (errors as SendError's JSON).
  using Handler = std::function<void(const httplib::Request& req, httplib::Response& res)>;

  /// REQUIRES: `server` outlives this and is not listening yet.
  explicit Router(httplib::Server& server) : server_(server) {}
  void Get(const char* pattern, Handler handler);
  void Post(const char* pattern, Handler handler);
  /// GET `pattern` answers with the embedded page `asset` (SendAsset).
  void Page(const char* pattern, const char* asset);
  /// A member `serve` of `group` as a handler. REQUIRES: `group` outlives the server's threads.
  template <typename Group>
  static Handler Bind(Group* group,
                      void (Group::*serve)(const httplib::Request&, httplib::Response&)) {
    return [group, serve](const httplib::Request& req, httplib::Response& res) {
      (group->*serve)(req, res);
    };
  }

 private:
  httplib::Server& server_;
};

}  // namespace tunebus::dashboard
