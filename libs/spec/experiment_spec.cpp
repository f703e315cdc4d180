#include "libs/spec/experiment_spec.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "libs/spec/spec_parser.hpp"

namespace tunebus {

namespace fs = std::filesystem;
using spec_internal::NormalizeDir;

Result<ExperimentSpec> ParseExperimentYaml(const std::string& yaml_text,
                                           const std::string& base_dir,
                                           const std::string& source_name) {
  spec_internal::SpecParser parser(source_name, base_dir);
  return parser.Parse(yaml_text, source_name);
}

Result<ExperimentSpec> ParseExperimentFile(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    return Status::NotFound("cannot read experiment file '" + path + "': it is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::NotFound("cannot read experiment file '" + path + "': " + std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::NotFound("cannot read experiment file '" + path + "'");
  fs::path abs = fs::absolute(fs::path(path), ec);
  if (ec) abs = fs::path(path);
  return ParseExperimentYaml(text.str(), NormalizeDir(abs.parent_path()), path);
}

}  // namespace tunebus
