// WhatIfRoutes: the experiment page's what-if panel (docs/how-to/whatif.md,
// docs/how-to/dashboard.md):
//
//   GET /api/experiments/NAME/whatif?scheduler=JSON[&sweep=JSON][&seed=N]
//       the scheduler's `whatif` answer (proto/control.hpp WhatIf): one replay's report beside
//       what happened, or with `sweep` the table of every setting of the grid; errors as the
//       control request's (400 for a malformed scheduler or sweep, pbt, a bad parameter; 404 for
//       an unknown experiment; 409 for one still running).
//
// The panel (static/whatif.js) offers preset settings (ASHA, HyperBand, the median stopping rule,
// an ASHA sweep) and a form for any other.
// A read: a viewer may ask it. The replay runs in the scheduler, off its event loop; this route
// waits for its answer on the HTTP thread (DashboardOptions::request_timeout).
// Thread-safety: handlers run on several HTTP threads at once; no state of its own.
#pragma once

#include <nlohmann/json.hpp>

#include "services/scheduler/dashboard/http.hpp"
#include "services/scheduler/dashboard/routes/control_pool.hpp"

namespace tunebus::dashboard {

class WhatIfRoutes {
 public:
  /// REQUIRES: `control` outlives this.
  explicit WhatIfRoutes(ControlPool& control) : control_(control) {}
  void AddTo(Router& router);

 private:
  void ServeWhatIf(const httplib::Request& req, httplib::Response& res);

  ControlPool& control_;
};

}  // namespace tunebus::dashboard
