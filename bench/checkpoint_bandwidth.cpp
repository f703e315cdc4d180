// Checkpoint bandwidth: save and restore of a checkpoint folder through the
// real checkpoint-store binary, on the path a trial-worker uses (CheckpointTransfer: `tar` as a
// child process, proto::kCheckpointChunkBytes chunks over a DEALER to the store's ROUTER on
// tcp://127.0.0.1), beside `dd` to the same disk in the same run.
//
// Per size (--sizes-mib, default 64,1024) and run (--runs), in a fresh folder under --dir:
//   dd write    dd if=/dev/zero bs=4M conv=fdatasync: the disk's sequential write rate
//   dd read     the same file after the page cache is dropped: its sequential read rate
//   save        a folder of 4 files of random bytes (written and fdatasync'ed first, so it is in
//               the page cache as a trainable's fresh checkpoint is) uploaded by
//               CheckpointTransfer::Upload to a fresh checkpoint-store (synced, as deployed);
//               the time from Upload to the store's acknowledgement of the committing chunk
//   restore     the store stopped and started again on its data (everything it holds is then in
//               its files), the page cache dropped, CheckpointTransfer::Download into a new
//               folder; the time to the last byte unpacked by tar
// and prints one JSON line per size: MB/s (10^6 bytes of checkpoint files per second) of each,
// the ratios save / dd write and restore / dd read (the figures of the median run by the save
// ratio, every run's ratios alongside), and the peak RSS (VmHWM, bytes) of the store process
// during the save and during the restore, and of this process (the transfer's side: a worker's
// part; tar runs as its child), and each one's CPU seconds during the save and the restore (what
// the transfer costs whatever else the host runs). The restored folder is compared with the
// saved one.
//
// The page cache is dropped with /proc/sys/vm/drop_caches when writable (root), else each file
// of the folder is fdatasync'ed and evicted with posix_fadvise(POSIX_FADV_DONTNEED).
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "bench/machine.hpp"
#include "bench/sim_cluster.hpp"
#include "libs/bus/domains.hpp"
#include "libs/bus/event_loop.hpp"
#include "libs/bus/request_client.hpp"
#include "libs/bus/security.hpp"
#include "libs/bus/socket.hpp"
#include "libs/core/sha256.hpp"
#include "libs/service/chunk_heap.hpp"
#include "libs/workdir/tar_process.hpp"
#include "services/trial-worker/checkpoint_transfer.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;
using tunebus::bench::Clock;
using tunebus::bench::Seconds;

namespace {

constexpr uint64_t kMiB = 1u << 20;
constexpr int kFilesPerCheckpoint = 4;

/// Runs `argv` (stdout and stderr to /dev/null) and waits; true if it exited 0.
bool RunQuiet(const std::vector<std::string>& argv) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    std::vector<char*> raw;
    for (const std::string& a : argv) raw.push_back(const_cast<char*>(a.c_str()));
    raw.push_back(nullptr);
    execvp(raw[0], raw.data());
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/// Drops `folder`'s files from the page cache; returns how ("drop_caches" or "fadvise").
std::string EvictPageCache(const fs::path& folder) {
  sync();
  if (std::ofstream drop("/proc/sys/vm/drop_caches"); drop && (drop << "1\n") && drop.flush()) {
    return "drop_caches";
  }
  std::error_code ec;
  for (fs::recursive_directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    const int fd = open(it->path().c_str(), O_RDONLY);
    if (fd < 0) continue;
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
  }
  return "fadvise";
}

/// The peak resident set (VmHWM) of process `pid`, bytes; 0 if unreadable.
uint64_t PeakRssBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

/// Writes `files` files of `bytes / files` random bytes each into `folder` (fdatasync'ed, so
/// no writeback of them overlaps a measurement), 1 MiB at a time. Returns their SHA-256s.
std::vector<std::string> WriteCheckpointFolder(const fs::path& folder, uint64_t bytes, int files) {
  fs::create_directories(folder);
  std::mt19937_64 rng(42);
  std::vector<uint64_t> block(kMiB / sizeof(uint64_t));
  std::vector<std::string> digests;
  for (int f = 0; f < files; ++f) {
    const fs::path path = folder / fmt::format("part{}.bin", f);
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    tunebus::Sha256 hash;
    for (uint64_t left = bytes / files; left > 0;) {
      for (uint64_t& word : block) word = rng();
      const size_t n = std::min<uint64_t>(left, kMiB);
      (void)tunebus::WriteAll(fd, reinterpret_cast<const char*>(block.data()), n);
      hash.Update(reinterpret_cast<const char*>(block.data()), n);
      left -= n;
    }
    fdatasync(fd);
    close(fd);
    digests.push_back(hash.HexDigest());
  }
  return digests;
}

/// SHA-256s of the files WriteCheckpointFolder wrote, read back from `folder` ("" if missing).
std::vector<std::string> DigestFolder(const fs::path& folder, int files) {
  std::vector<std::string> digests;
  std::vector<char> block(kMiB);
  for (int f = 0; f < files; ++f) {
    std::ifstream in(folder / fmt::format("part{}.bin", f), std::ios::binary);
    if (!in) {
      digests.emplace_back();
      continue;
    }
    tunebus::Sha256 hash;
    while (in.read(block.data(), std::streamsize(block.size())) || in.gcount() > 0) {
      hash.Update(block.data(), size_t(in.gcount()));
    }
    digests.push_back(hash.HexDigest());
  }
  return digests;
}

/// A checkpoint-store process on tcp://127.0.0.1 (a port the kernel picks) with its data in
/// `data_dir`; stopped with SIGTERM when destroyed.
class Store {
 public:
  Store(const fs::path& bin, const fs::path& dir, const fs::path& data_dir, int generation) {
    const fs::path ready = dir / fmt::format("store{}.ready", generation);
    service_ = std::make_unique<tunebus::bench::Service>(
        bin / "checkpoint-store",
        std::vector<std::string>{"--endpoint", "tcp://127.0.0.1:*", "--data-dir", data_dir.string(),
                                 "--ready-file", ready.string(), "--log-level", "warn"},
        dir / fmt::format("store{}.log", generation));
    for (int i = 0; i < 3000 && endpoint_.empty(); ++i) {
      std::ifstream in(ready);
      if (in) {
        const json text = json::parse(in, nullptr, /*allow_exceptions=*/false);
        if (text.is_object() && text.value("pid", 0) == service_->pid()) {
          endpoint_ = text["endpoints"].value("endpoint", "");
        }
      }
      if (endpoint_.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  pid_t pid() const { return service_->pid(); }
  /// "" when the store did not report its endpoint within 30 s.
  const std::string& endpoint() const { return endpoint_; }

 private:
  std::unique_ptr<tunebus::bench::Service> service_;
  std::string endpoint_;
};

/// CPU seconds (user + system) of this process (`who` RUSAGE_SELF) or of its reaped children
/// (RUSAGE_CHILDREN).
double RusageCpuSeconds(int who) {
  rusage usage{};
  getrusage(who, &usage);
  return double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

/// What one transfer took: wall seconds, and the CPU seconds of each process on the way.
struct TransferFigures {
  double wall_s = 0;
  double store_cpu_s = 0;     // the checkpoint-store process
  double transfer_cpu_s = 0;  // this process: CheckpointTransfer, the worker's part
  double tar_cpu_s = 0;       // the tar child
  json Json() const {
    return {{"store", store_cpu_s}, {"transfer", transfer_cpu_s}, {"tar", tar_cpu_s}};
  }
};

/// Runs one transfer (`start` calls Upload or Download with the callback it is given) on a
/// fresh loop and DEALER to the store; returns its figures, or nullopt with a message.
std::optional<TransferFigures> Transfer(
    const std::string& endpoint, pid_t store_pid,
    const std::function<void(tunebus::CheckpointTransfer&, tunebus::CheckpointTransfer::Done)>&
        start) {
  zmq::context_t ctx(1);
  auto socket = tunebus::bus::Connect(ctx, zmq::socket_type::dealer, endpoint,
                                      *tunebus::bus::Security::Plaintext(),
                                      tunebus::bus::kCheckpointStoreKey);
  if (!socket.ok()) {
    std::fprintf(stderr, "checkpoint_bandwidth: %s\n", socket.status().ToString().c_str());
    return std::nullopt;
  }
  tunebus::bus::EventLoop loop;
  tunebus::bus::RequestClient store(loop, std::move(socket).value(), "checkpoint-store");
  tunebus::CheckpointTransfer transfer(loop, store);
  std::optional<tunebus::Result<int64_t>> result;
  TransferFigures figures;
  const double store0 = tunebus::bench::CpuSeconds(store_pid),
               self0 = RusageCpuSeconds(RUSAGE_SELF), children0 = RusageCpuSeconds(RUSAGE_CHILDREN);
  const Clock::time_point t0 = Clock::now();
  start(transfer, [&result](tunebus::Result<int64_t> bytes) { result = std::move(bytes); });
  while (!result && !tunebus::bench::Interrupted()) loop.RunOnce(tunebus::bus::Duration{100});
  figures.wall_s = Seconds(t0, Clock::now());
  figures.store_cpu_s = tunebus::bench::CpuSeconds(store_pid) - store0;
  figures.transfer_cpu_s = RusageCpuSeconds(RUSAGE_SELF) - self0;
  figures.tar_cpu_s = RusageCpuSeconds(RUSAGE_CHILDREN) - children0;
  if (!result || !result->ok()) {
    std::fprintf(stderr, "checkpoint_bandwidth: transfer failed: %s\n",
                 result ? result->status().ToString().c_str() : "interrupted");
    return std::nullopt;
  }
  return figures;
}

/// Wall seconds of `argv`, nullopt if it failed.
std::optional<double> Timed(const std::vector<std::string>& argv) {
  const Clock::time_point t0 = Clock::now();
  if (!RunQuiet(argv)) {
    std::fprintf(stderr, "checkpoint_bandwidth: %s failed\n", argv[0].c_str());
    return std::nullopt;
  }
  return Seconds(t0, Clock::now());
}

/// One run at `mib` MiB: every figure of the JSON line, or nullopt after a failure.
std::optional<json> RunOnce(const fs::path& bin, const fs::path& parent, uint64_t mib) {
  tunebus::bench::TempDir dir("tunebus-checkpoint-bench", parent);
  if (dir.path().empty()) return std::nullopt;
  const uint64_t bytes = mib * kMiB;
  const double mb = double(bytes) / 1e6;
  json line = {{"size_mib", mib}};

  const fs::path dd_file = dir.path() / "dd.bin";
  const auto dd_write = Timed({"dd", "if=/dev/zero", "of=" + dd_file.string(), "bs=4M",
                               fmt::format("count={}", mib / 4), "conv=fdatasync"});
  if (!dd_write) return std::nullopt;
  const std::string evicted = EvictPageCache(dir.path());
  const auto dd_read = Timed({"dd", "if=" + dd_file.string(), "of=/dev/null", "bs=4M"});
  if (!dd_read) return std::nullopt;
  fs::remove(dd_file);

  const fs::path source = dir.path() / "checkpoint";
  const std::vector<std::string> digests =
      WriteCheckpointFolder(source, bytes, kFilesPerCheckpoint);
  const fs::path data_dir = dir.path() / "store";
  const std::string id = "bench/bench_00000/00000001-a1";
  std::optional<TransferFigures> save, restore;
  uint64_t save_rss = 0, restore_rss = 0;
  {
    Store store(bin, dir.path(), data_dir, 1);
    if (store.endpoint().empty()) return std::nullopt;
    save = Transfer(store.endpoint(), store.pid(), [&](tunebus::CheckpointTransfer& t, auto done) {
      t.Upload(source.string(), id, json::object(), std::move(done));
    });
    save_rss = PeakRssBytes(store.pid());
  }
  if (!save) return std::nullopt;
  const fs::path restored = dir.path() / "restored";
  {
    Store store(bin, dir.path(), data_dir, 2);
    if (store.endpoint().empty()) return std::nullopt;
    EvictPageCache(dir.path());
    restore =
        Transfer(store.endpoint(), store.pid(), [&](tunebus::CheckpointTransfer& t, auto done) {
          t.Download(id, restored.string(), std::move(done));
        });
    restore_rss = PeakRssBytes(store.pid());
  }
  if (!restore) return std::nullopt;
  if (DigestFolder(restored, kFilesPerCheckpoint) != digests) {
    std::fprintf(stderr, "checkpoint_bandwidth: the restored folder differs from the saved one\n");
    return std::nullopt;
  }
  line["dd_write_mb_per_s"] = mb / *dd_write;
  line["dd_read_mb_per_s"] = mb / *dd_read;
  line["save_mb_per_s"] = mb / save->wall_s;
  line["restore_mb_per_s"] = mb / restore->wall_s;
  line["save_s"] = save->wall_s;
  line["restore_s"] = restore->wall_s;
  line["save_ratio_to_dd_write"] = *dd_write / save->wall_s;
  line["restore_ratio_to_dd_read"] = *dd_read / restore->wall_s;
  line["save_cpu_s"] = save->Json();
  line["restore_cpu_s"] = restore->Json();
  line["store_peak_rss_bytes_save"] = save_rss;
  line["store_peak_rss_bytes_restore"] = restore_rss;
  line["transfer_peak_rss_bytes"] = PeakRssBytes(getpid());
  line["page_cache_dropped_by"] = evicted;
  return line;
}

/// The filesystem type of `path` ("ext4", "tmpfs", ... or the magic number in hex).
std::string FilesystemType(const fs::path& path) {
  struct statfs s {};
  if (statfs(path.c_str(), &s) != 0) return "unknown";
  switch (uint64_t(s.f_type)) {
    case 0xEF53:
      return "ext4";
    case 0x01021994:
      return "tmpfs";
    case 0x58465342:
      return "xfs";
    case 0x9123683E:
      return "btrfs";
    case 0x794c7630:
      return "overlayfs";
    default:
      return fmt::format("{:#x}", uint64_t(s.f_type));
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Checkpoint save and restore through the checkpoint-store beside dd"};
  fs::path bin, dir = fs::temp_directory_path();
  std::vector<uint64_t> sizes = {64, 1024};
  int runs = 1;
  app.add_option("--bin", bin, "folder of the checkpoint-store binary (BUILD/bin)")->required();
  app.add_option("--dir", dir, "where the store's data, the checkpoint and dd's file go (the disk)")
      ->capture_default_str();
  app.add_option("--sizes-mib", sizes, "checkpoint sizes, MiB (multiples of 4)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--runs", runs, "runs per size; the figures of the median run by save ratio")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  tunebus::bench::PrepareProcess();
  tunebus::service::KeepChunkBuffersInHeap();  // as the trial-worker's main does
  fs::create_directories(dir);
  dir = fs::absolute(dir);

  for (uint64_t mib : sizes) {
    std::vector<json> lines;
    for (int r = 0; r < runs && !tunebus::bench::Interrupted(); ++r) {
      auto line = RunOnce(bin, dir, mib);
      if (!line) return 1;
      lines.push_back(std::move(*line));
    }
    if (lines.empty()) return 1;
    std::sort(lines.begin(), lines.end(), [](const json& a, const json& b) {
      return a["save_ratio_to_dd_write"].get<double>() < b["save_ratio_to_dd_write"].get<double>();
    });
    json line = lines[lines.size() / 2];
    for (const char* key : {"save_ratio_to_dd_write", "restore_ratio_to_dd_read"}) {
      json all = json::array();
      for (const json& l : lines) all.push_back(l[key]);
      line[std::string("runs_") + key] = all;
    }
    json out = {{"benchmark", "checkpoint_bandwidth"},
                {"size_mib", mib},
                {"runs", lines.size()},
                {"filesystem", FilesystemType(dir)},
                {"chunk_bytes", tunebus::proto::kCheckpointChunkBytes}};
    out.update(line);
    out["machine"] = tunebus::bench::Machine();
    std::printf("%s\n", out.dump().c_str());
    std::fflush(stdout);
  }
  return 0;
}
