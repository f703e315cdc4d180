#include "libs/trainable/builtin_trainables.hpp"

#include <fmt/format.h>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "libs/trainable/fd.hpp"

namespace tunebus::trainable {

namespace fs = std::filesystem;

nlohmann::json MockMetrics(double lr, int64_t t) {
  const double s = 1.0 / (1.0 + 10.0 * lr * static_cast<double>(t));
  return {{"mean_accuracy", 1.0 - s}, {"loss", s}, {"episode_reward_mean", 100.0 * (1.0 - s)}};
}

namespace {

// Config readers: absent -> default; present with the wrong type -> InvalidArgument.
Result<double> GetNumber(const nlohmann::json& c, const char* key, double def) {
  if (!c.contains(key)) return def;
  if (!c[key].is_number())
    return Status::InvalidArgument(fmt::format("config.{} must be a number", key));
  return c[key].get<double>();
}
Result<int64_t> GetInt(const nlohmann::json& c, const char* key, int64_t def) {
  if (!c.contains(key)) return def;
  const auto& v = c[key];
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>()) {
    return static_cast<int64_t>(v.get<double>());
  }
  return Status::InvalidArgument(fmt::format("config.{} must be an integer", key));
}
Result<bool> GetBool(const nlohmann::json& c, const char* key) {
  if (!c.contains(key)) return false;
  if (c[key].is_boolean()) return c[key].get<bool>();
  if (c[key].is_number_integer()) return c[key].get<int64_t>() != 0;
  return Status::InvalidArgument(fmt::format("config.{} must be a boolean", key));
}

// Shared driver: a timer fd paces iterations; Step() makes each report.
class BuiltinTrainable : public Trainable {
 public:
  explicit BuiltinTrainable(TrialSetup setup) : setup_(std::move(setup)) {}

  Status Start() override {
    if (started_) return Status::FailedPrecondition("trainable already started");
    if (!setup_.config.is_object()) return Status::InvalidArgument("config must be a JSON object");
    if (Status s = Configure(setup_.config); !s.ok()) return s;
    started_ = true;
    iteration_ = setup_.start_iteration;
    iter_start_ = setup_.clock->Now();
    if (delay_.count() == 0) {  // unpaced: the first report is ready at once, no timer at all
      Iterate();
      return Status::Ok();
    }
    if (Status s = timer_.Open(); !s.ok()) return s;
    return timer_.Arm(delay_);
  }

  std::vector<int> fds() const override {
    if (!started_ || ended() || timer_.fd() < 0) return {};
    return {timer_.fd()};
  }

  void OnReadable() override {
    if (!started_ || ended() || !timer_.Consume()) return;
    Iterate();
  }

  Status SendDecision(Action action) override {
    if (Status s = CheckTrainableAction(action); !s.ok()) return s;
    if (ended()) return Status::FailedPrecondition("the trainable has exited");
    if (!ConsumeAwaited()) return Status::FailedPrecondition("no report waits for a decision");
    OnDecision(iteration_);
    last_decision_latency_s_ = setup_.clock->SecondsSince(reported_at_);
    if (action == Action::kCheckpoint) {  // saved now, before the next report or the end
      if (Status s = WriteCheckpoint(); !s.ok()) {
        ExitStatus es;
        es.exit_code = 1;
        es.error = s.message();
        End(std::move(es));
        return s;
      }
    }
    if (action == Action::kStop || done_) {
      ExitStatus es;
      es.ok = true;
      End(std::move(es));
      return Status::Ok();
    }
    iter_start_ = setup_.clock->Now();
    if (delay_.count() > 0) return timer_.Arm(delay_);
    // No pacing: the next report is made here, without a timer round trip through the kernel
    // (timerfd_settime + poll cost more than the noop iteration itself); the worker collects
    // it right after delivering this decision.
    Iterate();
    return Status::Ok();
  }

  void Kill() override {
    if (ended()) return;
    ExitStatus es;
    es.killed = true;
    es.signal = SIGKILL;
    es.exit_code = -SIGKILL;
    es.error = fmt::format("killed by signal {} (built-in trainable)", SIGKILL);
    End(std::move(es));
  }

 protected:
  /// One iteration: Step() makes the report, which is queued for the worker (or the trainable
  /// ends with an error).
  void Iterate() {
    ++iteration_;
    Result<nlohmann::json> metrics = Step(iteration_);
    if (!metrics.ok()) {
      ExitStatus es;
      es.exit_code = 1;
      es.error = metrics.status().message();
      End(std::move(es));
      return;
    }
    done_ = iteration_ >= max_iterations_;
    if (done_) (*metrics)["done"] = true;
    const auto now = setup_.clock->Now();
    reported_at_ = now;
    QueueReport(
        Report{std::move(*metrics), std::chrono::duration<double>(now - iter_start_).count()});
  }

  virtual Status Configure(const nlohmann::json& config) = 0;
  virtual Result<nlohmann::json> Step(int64_t t) = 0;
  /// The decision for the report of iteration `t` arrived (the scheduler made it durable).
  virtual void OnDecision(int64_t t) { (void)t; }

  TrialSetup setup_;
  std::chrono::nanoseconds delay_{0};
  int64_t max_iterations_ = 1;
  /// Bytes of filler each checkpoint carries besides checkpoint.json (padding.bin; bytes that
  /// do not compress), so tests can fill a store's disk.
  int64_t checkpoint_padding_bytes_ = 0;
  double last_decision_latency_s_ = -1;  // report -> its decision, seconds; -1 before the first

 private:
  Status WriteCheckpoint() {
    const fs::path dir = fs::path(setup_.trial_dir) / "checkpoint_tmp";
    std::error_code ec;
    fs::create_directories(dir, ec);
    std::ofstream out(dir / "checkpoint.json", std::ios::trunc);
    out << nlohmann::json{{"iteration", iteration_}}.dump() << "\n";
    if (ec || !out.good()) return Status::IoError("cannot write checkpoint into " + dir.string());
    if (checkpoint_padding_bytes_ > 0) {
      std::string filler(size_t(checkpoint_padding_bytes_), '\0');
      uint64_t x = uint64_t(iteration_) * 0x9E3779B97F4A7C15ull + 1;  // xorshift64: incompressible
      for (char& c : filler) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c = char(x);
      }
      std::ofstream pad(dir / "padding.bin", std::ios::trunc | std::ios::binary);
      pad.write(filler.data(), std::streamsize(filler.size()));
      if (!pad.good()) return Status::IoError("cannot write checkpoint into " + dir.string());
    }
    return Status::Ok();
  }

  SteadyTime reported_at_;
  TimerFd timer_;
  bool started_ = false;
  bool done_ = false;
  int64_t iteration_ = 0;
  SteadyTime iter_start_;
};

class MockTrainable : public BuiltinTrainable {
 public:
  using BuiltinTrainable::BuiltinTrainable;

 protected:
  Status Configure(const nlohmann::json& c) override {
    auto lr = GetNumber(c, "lr", 0.1);
    auto sleep_s = GetNumber(c, "sleep_s", 0.0);
    auto iterations = GetInt(c, "mock_iterations", 100);
    auto error = GetBool(c, "mock_error");
    auto error_iteration = GetInt(c, "mock_error_iteration", 2);
    auto persistent = GetBool(c, "persistent_error");
    auto padding = GetInt(c, "mock_checkpoint_bytes", 0);
    for (const Status& s : {lr.status(), sleep_s.status(), iterations.status(), error.status(),
                            error_iteration.status(), persistent.status(), padding.status()}) {
      if (!s.ok()) return s;
    }
    if (*padding < 0 || *padding > (int64_t(1) << 30)) {
      return Status::InvalidArgument("config.mock_checkpoint_bytes must be in [0, 2^30]");
    }
    checkpoint_padding_bytes_ = *padding;
    if (!(*lr > 0) || !std::isfinite(*lr)) return Status::InvalidArgument("config.lr must be > 0");
    if (!(*sleep_s >= 0) || *sleep_s > 1e6) {
      return Status::InvalidArgument("config.sleep_s must be in [0, 1e6] seconds");
    }
    lr_ = *lr;
    delay_ = std::chrono::nanoseconds(static_cast<int64_t>(*sleep_s * 1e9));
    max_iterations_ = *iterations;
    error_at_ = *error && (*persistent || setup_.attempt <= 1) ? *error_iteration : -1;
    auto truth = GetBool(c, "mock_truth_log");
    if (!truth.ok()) return truth.status();
    if (*truth) truth_log_.open(fs::path(setup_.trial_dir) / "mock_truth.jsonl", std::ios::app);
    return Status::Ok();
  }

  Result<nlohmann::json> Step(int64_t t) override {
    if (t == error_at_) {
      return Status::Internal(
          fmt::format("mock_error: failing at iteration {} (attempt {})", t, setup_.attempt));
    }
    Truth("report", t);
    return MockMetrics(lr_, t);
  }

  void OnDecision(int64_t t) override { Truth("acked", t); }

 private:
  // Ground truth for fault tests (config `mock_truth_log: true`): one JSON line per result this
  // trainable produced ("report") and per decision it received for one ("acked"), appended to
  // <trial_dir>/mock_truth.jsonl and flushed at once, so it survives the worker's SIGKILL.
  void Truth(const char* event, int64_t t) {
    if (!truth_log_.is_open()) return;
    truth_log_
        << nlohmann::json{{"event", event}, {"attempt", setup_.attempt}, {"iteration", t}}.dump()
        << std::endl;
  }

  double lr_ = 0.1;
  int64_t error_at_ = -1;
  std::ofstream truth_log_;
};

class NoopTrainable : public BuiltinTrainable {
 public:
  using BuiltinTrainable::BuiltinTrainable;

 protected:
  Status Configure(const nlohmann::json& c) override {
    auto iterations = GetInt(c, "mock_iterations", 1);
    if (!iterations.ok()) return iterations.status();
    auto metrics = GetInt(c, "noop_metrics", 1);
    if (!metrics.ok()) return metrics.status();
    if (*metrics < 1 || *metrics > 1000)
      return Status::InvalidArgument("config.noop_metrics must be in [1, 1000]");
    max_iterations_ = *iterations;
    metrics_ = *metrics;
    return Status::Ok();
  }
  Result<nlohmann::json> Step(int64_t t) override {
    nlohmann::json r{{"value", t}};
    for (int64_t k = 1; k < metrics_; ++k) r[fmt::format("m{}", k)] = t + k;
    if (last_decision_latency_s_ >= 0) r["decision_latency_s"] = last_decision_latency_s_;
    return r;
  }

 private:
  int64_t metrics_ = 1;
};

}  // namespace

Result<std::unique_ptr<Trainable>> MakeBuiltinTrainable(const std::string& name, TrialSetup setup) {
  std::unique_ptr<Trainable> t;
  if (name == "mock") {
    t = std::make_unique<MockTrainable>(std::move(setup));
  } else if (name == "noop") {
    t = std::make_unique<NoopTrainable>(std::move(setup));
  } else {
    return Status::InvalidArgument(
        fmt::format("unknown builtin trainable '{}' (known: mock, noop)", name));
  }
  return t;
}

}  // namespace tunebus::trainable
