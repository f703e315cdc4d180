#include <string>

#include "fuzz/fuzz_targets.hpp"
#include "libs/spec/experiment_spec.hpp"

namespace tunebus::fuzz {

int FuzzSpec(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Result<ExperimentSpec> spec = ParseExperimentYaml(text, "/nonexistent/fuzz", "fuzz.yaml");
  if (!spec.ok()) {
    Check(spec.status().message().rfind("fuzz.yaml", 0) == 0,
          "a spec error does not start with the file name: " + spec.status().message());
  }
  return 0;
}

}  // namespace tunebus::fuzz
