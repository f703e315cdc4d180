// How the dashboard (dashboard/server.hpp) hands a response's body to cpp-httplib: through a
// content provider of known length, sent as it is. cpp-httplib 0.11 (Debian bookworm's
// libcpp-httplib, built with brotli and zlib) compresses every text or JSON body it is given
// whole, with brotli at its default quality 11 whenever the browser accepts `br`, on the HTTP
// thread of each request: ~45 ms for a 16 KB trial page and ~525 ms for Chart.js's 200 KB on
// the 2-core machine of docs/explanation/performance/dashboard.md,
// most of a page load. A provided body is never compressed, and there is no setting for the level.
#pragma once

#include <httplib.h>

#include <memory>
#include <string>
#include <string_view>

namespace tunebus::dashboard {

/// Sets `res`'s body to `body` with Content-Type `content_type` and Content-Length its size,
/// uncompressed. `res` must have no body yet.
void SetBody(httplib::Response& res, std::string body, std::string_view content_type);

/// The same for a body that outlives the server (an embedded asset): not copied.
void SetStaticBody(httplib::Response& res, std::string_view body, std::string_view content_type);

}  // namespace tunebus::dashboard
