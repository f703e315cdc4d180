#include "services/scheduler/dashboard/routes/whatif_routes.hpp"

#include <httplib.h>

#include <string>

#include "proto/control.hpp"

namespace tunebus::dashboard {

using nlohmann::json;

void WhatIfRoutes::AddTo(Router& router) {
  router.Get(R"(/api/experiments/([^/]+)/whatif)", Router::Bind(this, &WhatIfRoutes::ServeWhatIf));
}

void WhatIfRoutes::ServeWhatIf(const httplib::Request& req, httplib::Response& res) {
  proto::WhatIf whatif;
  whatif.experiment = req.matches[1].str();
  whatif.scheduler_json = req.has_param("scheduler") ? req.get_param_value("scheduler") : "{}";
  whatif.sweep_json = req.has_param("sweep") ? req.get_param_value("sweep") : "";
  const int64_t seed = IntParam(req, "seed", 0);
  if (seed < 0) return SendError(res, Status::InvalidArgument("seed: expected an integer >= 0"));
  whatif.seed = uint64_t(seed);
  auto body = control_.Call(whatif);
  if (!body.ok()) return SendError(res, body.status());
  SendJson(res, *body);
}

}  // namespace tunebus::dashboard
