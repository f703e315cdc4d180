// Built-in trainables: run inside the worker (no process), paced by a timer fd the worker
// polls like any other trainable fd. For tests and benchmarks (DESIGN.md "Trainables").
//
// Iterations are global: the k-th report of an attempt is iteration t = start_iteration + k,
// so a restored trial continues its curve. Neither reports `training_iteration` (the scheduler
// fills it). Both obey "stop" (end ok at once) and end ok after answering a `done` report.
//
// mock — a deterministic learning curve. Config keys (all optional):
//   lr                    number > 0, default 0.1: speed of the curve
//   sleep_s               seconds per iteration, default 0
//   mock_iterations       the report of iteration mock_iterations has done: true (default 100)
//   mock_error            bool: fail (instead of reporting) at iteration mock_error_iteration
//   mock_error_iteration  default 2
//   persistent_error      bool: with mock_error, fail on every attempt; without it the error
//                         happens only on attempt 1 (like Ray Tune's mock trainable)
//   mock_truth_log        bool: append the ground truth for fault tests to
//                         <trial_dir>/mock_truth.jsonl, one line per result produced
//                         {"event":"report","attempt","iteration"} and per decision received
//                         {"event":"acked",...}, flushed at once
//   mock_checkpoint_bytes bytes of incompressible filler each checkpoint carries in
//                         padding.bin, default 0 (tests that fill the checkpoint-store's disk)
// Result of iteration t, with s = 1 / (1 + 10 * lr * t):
//   mean_accuracy = 1 - s,  loss = s,  episode_reward_mean = 100 * (1 - s)
// A "checkpoint" decision writes {"iteration": t} to <trial_dir>/checkpoint_tmp/checkpoint.json.
//
// noop — reports {"value": t} immediately at start and after every decision; done after
// mock_iterations (default 1). Config `noop_metrics` N (default 1) adds m1..m{N-1} = t + k.
// From its second report on it carries `decision_latency_s`: seconds from its previous report
// to that report's decision, as the trainable saw them (the benchmarks' decision latency).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "libs/trainable/trainable.hpp"

namespace tunebus::trainable {

/// The mock curve at iteration `t` (>= 1) for learning rate `lr`: the object described above.
nlohmann::json MockMetrics(double lr, int64_t t);

/// Makes builtin `name` ("mock" | "noop"). Errors: InvalidArgument naming an unknown builtin.
/// Config errors (a key of the wrong type) surface from Start() as InvalidArgument.
Result<std::unique_ptr<Trainable>> MakeBuiltinTrainable(const std::string& name, TrialSetup setup);

}  // namespace tunebus::trainable
