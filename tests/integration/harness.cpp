#include "tests/integration/harness.hpp"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "proto/codec.hpp"
#include "proto/store.hpp"
#include "tests/integration/message_filter.hpp"

namespace tunebus::testing {

namespace {

std::string SanitizedTestName() {
  std::string name = "tunebus";
  if (const auto* info = ::testing::UnitTest::GetInstance()->current_test_info()) {
    name = std::string(info->test_suite_name()) + "." + info->name();
  }
  for (char& c : name) {
    if (!isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') c = '_';
  }
  return name.substr(0, 80);
}

fs::path MakeTempDir(const std::string& stem) {
  const char* tmp = std::getenv("TMPDIR");
  fs::path root = (tmp && *tmp) ? fs::path(tmp) : fs::path("/tmp");
  std::string templ = (root / ("tunebus-it-" + stem + "-XXXXXX")).string();
  if (::mkdtemp(templ.data()) == nullptr) {
    throw std::runtime_error("mkdtemp(" + templ + "): " + std::strerror(errno));
  }
  return fs::path(templ);
}

}  // namespace

// ---------------------------------------------------------------------------------------------

fs::path BinDir() {
  if (const char* d = std::getenv("TUNEBUS_BIN_DIR"); d && *d) return fs::path(d);
#ifdef TUNEBUS_TEST_SOURCE_DIR
  return fs::path(TUNEBUS_TEST_SOURCE_DIR) / "build" / "bin";
#else
  return fs::path(__FILE__).parent_path().parent_path().parent_path() / "build" / "bin";
#endif
}

void CopyTunebusPackage(const fs::path& folder) {
  const fs::path package = SourceDir() / "clients" / "python" / "tunebus";
  for (const auto& entry : fs::recursive_directory_iterator(package)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".py") continue;
    const fs::path to = folder / "tunebus" / fs::relative(entry.path(), package);
    fs::create_directories(to.parent_path());
    fs::copy_file(entry.path(), to, fs::copy_options::overwrite_existing);
  }
}

fs::path SourceDir() {
  if (const char* d = std::getenv("TUNEBUS_SOURCE_DIR"); d && *d) return fs::path(d);
#ifdef TUNEBUS_TEST_SOURCE_DIR
  return fs::path(TUNEBUS_TEST_SOURCE_DIR);
#else
  return fs::path(__FILE__).parent_path().parent_path().parent_path();
#endif
}

bool WaitFor(const std::function<bool()>& predicate, Millis timeout, Millis poll) {
  return PollUntil(predicate, timeout, poll);
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> ReadLines(const fs::path& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

void WriteFile(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::string Tail(const fs::path& path, size_t n) {
  const auto lines = ReadLines(path);
  std::string out;
  for (size_t i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); ++i)
    out += lines[i] + "\n";
  return out;
}

// ---------------------------------------------------------------------------------------------

TempDir::TempDir() : path_(MakeTempDir(SanitizedTestName())) {}

TempDir::~TempDir() {
  if (::testing::Test::HasFailure()) {
    std::cerr << "[harness] the test failed; kept " << path_ << "\n";
    return;
  }
  if (const char* keep = std::getenv("TUNEBUS_TEST_KEEP"); keep && std::string(keep) == "1") {
    std::cerr << "[harness] TUNEBUS_TEST_KEEP=1; kept " << path_ << "\n";
    return;
  }
  std::error_code ec;
  fs::remove_all(path_, ec);
}

// ---------------------------------------------------------------------------------------------

std::string CommandResult::Describe() const {
  std::ostringstream ss;
  ss << (timed_out ? "TIMED OUT" : "exit " + std::to_string(exit_code)) << "\n--- stdout ---\n"
     << out << "\n--- stderr ---\n"
     << err;
  return ss.str();
}

nlohmann::json CommandResult::Json() const {
  return nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
}

CommandResult RunTunectl(const std::vector<std::string>& args, Millis timeout, const fs::path& dir,
                         const fs::path& cwd) {
  static std::atomic<int> counter{0};
  const bool own_dir = dir.empty();
  const fs::path out_dir = own_dir ? MakeTempDir("tunectl") : dir;
  Process::Options o;
  o.name = "tunectl-" + std::to_string(++counter);
  o.binary = BinDir() / "tunectl";
  o.args = args;
  o.log_dir = out_dir;
  o.cwd = cwd;
  auto p = Process::Spawn(o);
  CommandResult r;
  if (auto code = p->Wait(timeout)) {
    r.exit_code = *code;
  } else {
    p->Kill();
    r.timed_out = true;
    r.exit_code = -1;
  }
  r.out = p->Stdout();
  r.err = p->Stderr();
  if (own_dir) {
    std::error_code ec;
    fs::remove_all(out_dir, ec);
  }
  return r;
}

// ---------------------------------------------------------------------------------------------

std::string Ready::endpoint(const std::string& flag) const {
  auto it = endpoints.find(flag);
  return it == endpoints.end() ? std::string() : it->second;
}

::testing::AssertionResult WaitReady(Process& p, const fs::path& file, Millis timeout,
                                     Ready& ready) {
  std::string last_error = "no file";
  bool exited = false;
  const bool reported = WaitFor(
      [&] {
        // Read before checking the process: a service that wrote its file and then exited at
        // once still reported what it bound.
        std::error_code ec;
        if (fs::exists(file, ec)) {
          const auto j = nlohmann::json::parse(ReadFile(file), nullptr, /*allow_exceptions=*/false);
          if (!j.is_object() || !j.contains("endpoints")) {
            last_error = "unparsable: " + ReadFile(file);  // cannot happen: written by rename
          } else if (j.value("pid", 0) != p.pid()) {
            last_error = "a file of pid " + std::to_string(j.value("pid", 0));
          } else {
            ready = Ready{};
            ready.pid = p.pid();
            ready.metrics_port = j.value("metrics_port", 0);
            for (const auto& [flag, endpoint] : j["endpoints"].items())
              ready.endpoints[flag] = endpoint.get<std::string>();
            return true;
          }
        }
        if (!p.Running()) {
          exited = true;
          return true;
        }
        return false;
      },
      timeout, Millis{10});
  if (reported && !exited) return ::testing::AssertionSuccess();
  auto failure = ::testing::AssertionFailure() << p.name() << " (pid " << p.pid() << ") ";
  if (exited) {
    failure << "exited (code " << p.exit_code().value_or(-1) << ") before it wrote " << file;
  } else {
    failure << "did not write " << file << " within " << timeout.count() << " ms (" << last_error
            << ")";
  }
  return failure << "; its output:\n" << p.Output();
}

void PinReportedPorts(std::vector<std::string>& args, const Ready& ready) {
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& flag = args[i - 1];
    if (flag.rfind("--", 0) != 0) continue;
    std::string& value = args[i];
    if (flag == "--metrics-port" && value == "*" && ready.metrics_port > 0) {
      value = std::to_string(ready.metrics_port);
    } else if (value.rfind("tcp://", 0) == 0 && value.size() > 2 &&
               value.compare(value.size() - 2, 2, ":*") == 0) {
      if (const std::string bound = ready.endpoint(flag.substr(2)); !bound.empty()) value = bound;
    }
  }
}

::testing::AssertionResult SpawnReady(Process::Options& o, const fs::path& ready_file,
                                      std::unique_ptr<Process>& process, Ready& ready,
                                      Millis timeout) {
  if (std::find(o.args.begin(), o.args.end(), "--ready-file") == o.args.end()) {
    o.args.insert(o.args.end(), {"--ready-file", ready_file.string()});
  }
  fs::create_directories(ready_file.parent_path());
  // Each start either reports, fails for another reason (the last result), or finds its port
  // taken: then the next start is tried until the port is free, for up to 10 s.
  int starts = 0;
  ::testing::AssertionResult r = ::testing::AssertionFailure();
  bool port_taken = false;
  PollUntil(
      [&] {
        ++starts;
        std::error_code ec;
        fs::remove(ready_file, ec);
        process = Process::Spawn(o);
        r = WaitReady(*process, ready_file, timeout, ready);
        port_taken = !r && !process->Running() &&
                     process->Output().find("Address already in use") != std::string::npos;
        return !port_taken;
      },
      Millis{10000}, Millis{200});
  if (r) {
    PinReportedPorts(o.args, ready);
    return r;
  }
  if (!port_taken) return r;
  return ::testing::AssertionFailure()
         << o.name << " could not bind its port, taken by another process since it was "
         << "reported, in " << starts << " starts over 10 s; the last start: " << r.message();
}

void RunUnprivileged(Process::Options& o) {
  if (::geteuid() != 0) return;
  std::vector<std::string> args = {"--reuid=65534", "--regid=65534", "--clear-groups",
                                   o.binary.string()};
  args.insert(args.end(), o.args.begin(), o.args.end());
  o.args = std::move(args);
  o.binary = "/usr/bin/setpriv";
}

Cluster::Cluster(ClusterOptions options) : options_(std::move(options)) {}

Cluster::~Cluster() {
  if (::testing::Test::HasFailure() && !processes_.empty()) {
    std::cerr << "[harness] service logs (" << dir() / "logs"
              << "):\n"
              << LogTails(40);
  }
  StopAll();
}

std::vector<std::string> Cluster::worker_ids() const {
  std::vector<std::string> ids;
  for (int i = 1; i <= options_.workers; ++i) ids.push_back("w" + std::to_string(i));
  return ids;
}

std::string Cluster::Reported(const std::string& name, const std::string& flag) const {
  auto it = ready_.find(name);
  return it == ready_.end() ? std::string() : it->second.endpoint(flag);
}

int Cluster::metrics_port(const std::string& name) const {
  auto it = ready_.find(name);
  return it == ready_.end() ? 0 : it->second.metrics_port;
}

::testing::AssertionResult Cluster::Spawn(Process::Options o) {
  if (options_.metrics) o.args.insert(o.args.end(), {"--metrics-port", "*"});
  const bool own_keys = std::find(o.args.begin(), o.args.end(), "--keys-dir") != o.args.end();
  if (!options_.keys_dir.empty() && !own_keys)
    o.args.insert(o.args.end(), {"--keys-dir", options_.keys_dir});
  for (const ClusterOptions::Filtered& f : options_.filters) {
    if (f.process != o.name || f.filter == nullptr) continue;
    auto flag = std::find(o.args.begin(), o.args.end(), f.flag);
    if (flag == o.args.end() || flag + 1 == o.args.end()) {
      return ::testing::AssertionFailure() << o.name << " has no " << f.flag << " to filter";
    }
    f.filter->Connect(*(flag + 1));
    *(flag + 1) = f.filter->endpoint();
  }
  o.log_dir = dir() / "logs";
  o.cwd = dir();
  if (options_.unprivileged.contains(o.name)) RunUnprivileged(o);
  std::unique_ptr<Process> process;
  Ready ready;
  auto r = SpawnReady(o, ReadyFile(o.name), process, ready, options_.ready_timeout);
  spawn_options_[o.name] = o;
  processes_.push_back(std::move(process));
  if (r) ready_[o.name] = ready;
  return r;
}

::testing::AssertionResult Cluster::SpawnWorker(const std::string& id) {
  char cpus[32];
  std::snprintf(cpus, sizeof(cpus), "%g", options_.cpus_per_worker);
  Process::Options o;
  o.name = id;
  o.binary = BinDir() / "trial-worker";
  o.args = {"--worker-id",
            id,
            "--scheduler",
            worker_endpoint(),
            "--rm",
            rm(),
            "--store",
            store(),
            "--heartbeat-interval-ms",
            std::to_string(options_.heartbeat_interval_ms)};
  std::vector<std::string> extra;
  if (auto it = options_.worker_args.find(id); it != options_.worker_args.end()) extra = it->second;
  if (std::find(extra.begin(), extra.end(), "--cpus") == extra.end())
    extra.insert(extra.begin(), {"--cpus", cpus});
  if (std::find(extra.begin(), extra.end(), "--cache-dir") == extra.end()) {
    // Each worker's own working_dir cache, in the cluster's folder: no test sees another's.
    // Sticky and open to all, as /tmp, for workers that run unprivileged.
    fs::create_directories(dir() / "cache");
    ::chmod((dir() / "cache").c_str(), 01777);
    extra.insert(extra.begin(), {"--cache-dir", (dir() / "cache" / id).string()});
  }
  o.args.insert(o.args.end(), extra.begin(), extra.end());
  if (auto it = options_.worker_env.find(id); it != options_.worker_env.end()) o.env = it->second;
  return Spawn(std::move(o));
}

::testing::AssertionResult Cluster::Restart(const std::string& name) {
  auto it = spawn_options_.find(name);
  if (it == spawn_options_.end()) return ::testing::AssertionFailure() << "no process " << name;
  for (auto& p : processes_) {
    if (p && p->name() == name && p->Running()) p->Kill();
  }
  std::erase_if(processes_, [&](const std::unique_ptr<Process>& p) { return p->name() == name; });
  // The same flags, the ports pinned to those the first start reported (clients reconnect there).
  std::unique_ptr<Process> process;
  Ready ready;
  auto r = SpawnReady(it->second, ReadyFile(name), process, ready, options_.ready_timeout);
  processes_.push_back(std::move(process));
  if (r) ready_[name] = ready;
  return r;
}

::testing::AssertionResult Cluster::Restart(const std::string& name,
                                            const std::vector<std::string>& extra_args) {
  auto it = spawn_options_.find(name);
  if (it == spawn_options_.end()) return ::testing::AssertionFailure() << "no process " << name;
  it->second.args.insert(it->second.args.end(), extra_args.begin(), extra_args.end());
  return Restart(name);
}

::testing::AssertionResult Cluster::AddWorker(const std::string& id,
                                              std::vector<std::string> extra_args) {
  options_.worker_args[id] = std::move(extra_args);
  if (auto spawned = SpawnWorker(id); !spawned) return spawned;
  const bool up = WaitFor(
      [&] {
        const nlohmann::json view = Workers();
        if (!view.is_array()) return false;
        for (const auto& w : view) {
          if (w.value("worker_id", "") == id && w.value("alive", false) &&
              w.value("connected", false))
            return true;
        }
        return false;
      },
      options_.ready_timeout, Millis{100});
  if (up) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "worker " << id << " did not come up:\n" << LogTails();
}

::testing::AssertionResult Cluster::Start() {
  StopAll();
  processes_.clear();
  ready_.clear();
  if (!options_.unprivileged.empty()) {
    // Unprivileged processes write their ready files too: they may pass through dir() (not
    // list it) and write in ready/ (sticky, as /tmp).
    fs::create_directories(dir() / "ready");
    ::chmod(dir().c_str(), 0711);
    ::chmod((dir() / "ready").c_str(), 01777);
  }
  const std::string hb = std::to_string(options_.heartbeat_interval_ms);
  auto spawn = [&](const std::string& name, std::vector<std::string> args) {
    Process::Options o;
    o.name = name;
    o.binary = BinDir() / name;
    o.args = std::move(args);
    if (auto extra = options_.service_args.find(name); extra != options_.service_args.end()) {
      o.args.insert(o.args.end(), extra->second.begin(), extra->second.end());
    }
    return Spawn(std::move(o));
  };
  // Each service starts once those it connects to have reported where they listen.
  ::testing::AssertionResult spawned = spawn(
      "checkpoint-store", {"--endpoint", kAnyLoopback, "--data-dir", (dir() / "store").string()});
  if (spawned) {
    spawned = spawn("resource-manager", {"--endpoint", kAnyLoopback, "--events-endpoint",
                                         kAnyLoopback, "--heartbeat-interval-ms", hb, "--liveness",
                                         std::to_string(options_.rm_liveness)});
  }
  if (spawned) {
    std::vector<std::string> args = {"--control",   kAnyLoopback, "--workers", kAnyLoopback,
                                     "--events",    kAnyLoopback, "--rm",      rm(),
                                     "--rm-events", rm_events(),  "--store",   store()};
    args.insert(args.end(), options_.scheduler_args.begin(), options_.scheduler_args.end());
    spawned = spawn("scheduler", std::move(args));
  }
  for (const auto& id : worker_ids()) {
    if (spawned) spawned = SpawnWorker(id);
  }
  if (!spawned) {
    StopAll();
    return ::testing::AssertionFailure() << "the cluster did not start: " << spawned.message();
  }

  bool died = false;
  nlohmann::json last_view;
  const bool ready = WaitFor(
      [&] {
        if (!Dead().empty()) {
          died = true;
          return true;
        }
        last_view = Workers();
        if (!last_view.is_array()) return false;
        for (const auto& id : worker_ids()) {
          bool ok = false;
          for (const auto& w : last_view) {
            if (w.value("worker_id", "") == id && w.value("alive", false) &&
                w.value("connected", false))
              ok = true;
          }
          if (!ok) return false;
        }
        return true;
      },
      options_.ready_timeout, Millis{100});
  if (ready && !died) return ::testing::AssertionSuccess();
  std::string dead;
  for (const auto& n : Dead())
    dead += " " + n + "(exit " + std::to_string(process(n)->exit_code().value_or(-1)) + ")";
  auto f = ::testing::AssertionFailure()
           << (died ? "a service exited early:" + dead
                    : "workers not all alive and connected after " +
                          std::to_string(options_.ready_timeout.count()) +
                          " ms; last view: " + last_view.dump())
           << "\n"
           << LogTails(15);
  StopAll();
  return f;
}

std::map<std::string, int> Cluster::StopAll() {
  std::map<std::string, int> codes;
  auto stop_group = [&](bool workers) {
    std::vector<Process*> group;
    for (auto& p : processes_) {
      const bool is_worker = p->name().rfind("w", 0) == 0;
      if (is_worker == workers) group.push_back(p.get());
    }
    for (Process* p : group) p->Signal(SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + Millis{5000};
    for (Process* p : group) {
      const auto left =
          std::chrono::duration_cast<Millis>(deadline - std::chrono::steady_clock::now());
      if (!p->Wait(std::max(left, Millis{0}))) p->Kill();
      codes[p->name()] = p->exit_code().value_or(-1);
    }
  };
  stop_group(true);
  stop_group(false);
  return codes;
}

CommandResult Cluster::Ctl(const std::vector<std::string>& args, Millis timeout) {
  std::vector<std::string> full = {"--connect", control()};
  if (!options_.keys_dir.empty()) full.insert(full.end(), {"--keys-dir", options_.keys_dir});
  full.insert(full.end(), args.begin(), args.end());
  return RunTunectl(full, timeout, dir() / "tunectl", dir());
}

nlohmann::json Cluster::Workers() {
  auto r = Ctl({"-o", "json", "workers"}, Millis{10000});
  if (r.exit_code != 0) return nlohmann::json(nlohmann::json::value_t::discarded);
  return r.Json();
}

Process* Cluster::process(const std::string& name) {
  for (auto& p : processes_) {
    if (p->name() == name) return p.get();
  }
  return nullptr;
}

std::vector<Process*> Cluster::processes() {
  std::vector<Process*> out;
  for (auto& p : processes_) out.push_back(p.get());
  return out;
}

std::vector<std::string> Cluster::Dead() {
  std::vector<std::string> dead;
  for (auto& p : processes_) {
    if (!p->Running()) dead.push_back(p->name());
  }
  return dead;
}

std::string Cluster::LogTails(size_t lines) {
  std::string out;
  for (auto& p : processes_) {
    out += "----- " + p->name() + " (" + p->stdout_path().string() + ") -----\n" +
           Tail(p->stdout_path(), lines);
    const std::string err = Tail(p->stderr_path(), lines);
    if (!err.empty())
      out += "----- " + p->name() + " (" + p->stderr_path().string() + ") -----\n" + err;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

DealerClient::DealerClient(const std::string& endpoint)
    : ctx_(1), socket_(ctx_, zmq::socket_type::dealer) {
  socket_.set(zmq::sockopt::linger, 0);
  socket_.connect(endpoint);
}

void DealerClient::Send(const std::string& payload, const std::vector<std::string>& more) {
  socket_.send(zmq::buffer(payload),
               more.empty() ? zmq::send_flags::none : zmq::send_flags::sndmore);
  for (size_t i = 0; i < more.size(); ++i) {
    socket_.send(zmq::buffer(more[i]),
                 i + 1 < more.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
}

std::optional<std::string> DealerClient::Receive(Millis timeout) {
  zmq::pollitem_t items[] = {{static_cast<void*>(socket_), 0, ZMQ_POLLIN, 0}};
  zmq::poll(items, 1, timeout);
  if (!(items[0].revents & ZMQ_POLLIN)) return std::nullopt;
  std::string last;
  while (true) {
    zmq::message_t msg;
    if (!socket_.recv(msg, zmq::recv_flags::dontwait)) break;
    last = msg.to_string();
    if (!msg.more()) break;
  }
  return last;
}

std::vector<std::string> ReadStoredRecords(const std::string& store_endpoint,
                                           const std::string& journal) {
  DealerClient client(store_endpoint);
  std::vector<std::string> records;
  for (uint64_t from = 1;;) {
    proto::JournalRead read;
    read.id = from;
    read.experiment = journal;
    read.from_seq = from;
    read.max_records = 5000;
    client.Send(proto::Encode(read));
    auto frame = client.Receive(Millis{5000});
    if (!frame) {
      ADD_FAILURE() << "no journal_read_reply from " << store_endpoint;
      break;
    }
    auto d = proto::Decode(frame->data(), frame->size());
    if (!d.ok() || d->type() != proto::JournalReadReply::kType) {
      ADD_FAILURE() << "not a journal_read_reply: " << (d.ok() ? d->type() : d.status().ToString());
      break;
    }
    auto reply = d->As<proto::JournalReadReply>();
    if (!reply.ok()) {
      ADD_FAILURE() << reply.status().ToString();
      break;
    }
    for (std::string& r : reply->records) records.push_back(std::move(r));
    from = reply->first_seq + reply->records.size();
    if (reply->end || reply->records.empty()) break;
  }
  return records;
}

}  // namespace tunebus::testing
