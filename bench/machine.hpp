// The machine a benchmark ran on, for its JSON output: {"cores", "cpu_model"}.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

namespace tunebus::bench {

inline nlohmann::json Machine() {
  std::string model;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  return {{"cores", std::thread::hardware_concurrency()}, {"cpu_model", model}};
}

}  // namespace tunebus::bench
