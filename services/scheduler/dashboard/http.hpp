// The dashboard's HTTP answers, shared by the files that add its routes (dashboard/
// experiment_routes.cpp, trial_routes.cpp, control_routes.cpp, analysis_routes.cpp and
// server.cpp's /events). Defined in dashboard/server.cpp.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "libs/core/status.hpp"

namespace httplib {
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

}  // namespace tunebus::dashboard
