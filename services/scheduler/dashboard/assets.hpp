// The dashboard's static files, embedded in the binary at build time (services/scheduler/
// dashboard/embed_assets.cmake generates assets.cpp): every file of services/scheduler/
// dashboard/static/ by its file name, and "chart.min.js", Chart.js's UMD build from Debian's
// libjs-chart.js, when the build found it (docs/how-to/dashboard.md).
#pragma once

#include <string_view>

namespace tunebus::dashboard {

/// The embedded file `name` ("index.html", "dashboard.js", "chart.min.js"), or nullptr.
const std::string_view* FindAsset(std::string_view name);

/// The Content-Type of a file by its extension (html, js, css, svg; else
/// application/octet-stream).
std::string_view ContentTypeOf(std::string_view name);

}  // namespace tunebus::dashboard
