// Shared plumbing of tunectl's control-socket commands: one request, its reply printed as JSON
// (-o json) or as text, and the exit codes of commands.hpp.
#pragma once

#include <iostream>
#include <nlohmann/json.hpp>

#include "libs/bus/control_client.hpp"
#include "services/tunectl/commands.hpp"

namespace tunebus {

// Sends one request; the reply body, or why not (Unavailable when the server is unreachable).
template <typename M>
inline Result<nlohmann::json> Call(const GlobalFlags& g, M request) {
  zmq::context_t ctx;
  auto client =
      ControlClient::Connect(ctx, g.connect, *g.security, std::chrono::milliseconds(g.timeout_ms));
  if (!client.ok()) return client.status();
  return client->Call(request);
}

// A request (ListTrials, ShowTrial, StopTrialCommand, ...) for the experiment -e names.
template <typename M>
inline M ExperimentRequest(const GlobalFlags& g) {
  M request;
  request.experiment = g.experiment;
  return request;
}

// Prints the error; the exit code: 3 when the server cannot be reached, else 1.
inline int Fail(const Status& status) {
  std::cerr << "tunectl: " << status.ToString() << "\n";
  return status.code() == StatusCode::kUnavailable ? 3 : 1;
}

// Prints a reply body: as JSON with -o json, else through `print`.
template <typename Print>
int PrintBody(const GlobalFlags& g, const nlohmann::json& body, Print print) {
  if (g.output == "json") {
    std::cout << body.dump(2) << std::endl;
  } else {
    print(body);
  }
  return 0;
}

template <typename M, typename Print>
int CallAndPrint(const GlobalFlags& g, M request, Print print) {
  auto body = Call(g, std::move(request));
  return body.ok() ? PrintBody(g, *body, print) : Fail(body.status());
}

}  // namespace tunebus
