#include "services/trial-worker/report_encoding.hpp"

#include <msgpack.hpp>

#include "libs/core/trial.hpp"

namespace tunebus {

namespace {

// msgpack-c's packer over a std::string that it appends to.
struct Appender {
  std::string& out;
  void write(const char* data, size_t size) { out.append(data, size); }
};

}  // namespace

void AppendReportMetrics(const nlohmann::json& metrics, std::string_view hostname,
                         std::string_view node_ip, int64_t pid, std::string& out) {
  if (!metrics.is_object()) {
    nlohmann::json::to_msgpack(metrics, out);  // appends
    return;
  }
  // The auto-filled keys in key order (nlohmann's std::map order). msgpack-c picks the same
  // (smallest) string and integer forms as nlohmann's writer.
  constexpr std::string_view kFilled[] = {result_keys::kHostname, result_keys::kNodeIp,
                                          result_keys::kPid};
  size_t size = metrics.size() + std::size(kFilled);
  for (std::string_view key : kFilled) {
    if (metrics.contains(std::string(key))) --size;
  }
  Appender appender{out};
  msgpack::packer<Appender> pk(appender);
  auto pack_str = [&pk](std::string_view s) {
    pk.pack_str(uint32_t(s.size()));
    pk.pack_str_body(s.data(), uint32_t(s.size()));
  };
  size_t next = 0;  // the next auto-filled key to write
  auto pack_filled = [&] {
    pack_str(kFilled[next]);
    switch (next++) {
      case 0:
        pack_str(hostname);
        break;
      case 1:
        pack_str(node_ip);
        break;
      default:
        pk.pack_int64(pid);
    }
  };
  pk.pack_map(uint32_t(size));
  for (auto it = metrics.begin(); it != metrics.end(); ++it) {
    const std::string& key = it.key();
    while (next < std::size(kFilled) && kFilled[next] < key) pack_filled();
    if (next < std::size(kFilled) && kFilled[next] == key) {
      pack_filled();  // the worker's value replaces the reported one
      continue;
    }
    pack_str(key);
    nlohmann::json::to_msgpack(it.value(), out);  // appends
  }
  while (next < std::size(kFilled)) pack_filled();
}

}  // namespace tunebus
