#include "libs/workdir/exclude_matcher.hpp"

#include <fmt/format.h>
#include <fnmatch.h>

namespace tunebus {
namespace {

std::vector<std::string> SplitComponents(std::string_view path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t slash = path.find('/', start);
    const size_t end = slash == std::string_view::npos ? path.size() : slash;
    if (end > start) out.emplace_back(path.substr(start, end - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return out;
}

// Whether `path[pi..]` matches `pattern[qi..]`, component by component.
bool MatchFrom(const std::vector<std::string>& pattern, size_t qi,
               const std::vector<std::string>& path, size_t pi) {
  if (qi == pattern.size()) return pi == path.size();
  if (pattern[qi] == "**") {
    for (size_t skip = pi; skip <= path.size(); ++skip) {
      if (MatchFrom(pattern, qi + 1, path, skip)) return true;
    }
    return false;
  }
  if (pi == path.size()) return false;
  if (::fnmatch(pattern[qi].c_str(), path[pi].c_str(), 0) != 0) return false;
  return MatchFrom(pattern, qi + 1, path, pi + 1);
}

}  // namespace

Status ExcludeMatcher::Add(std::string_view pattern) {
  Rule rule;
  std::string_view p = pattern;
  if (!p.empty() && p.front() == '!') {
    rule.negated = true;
    p.remove_prefix(1);
  }
  if (!p.empty() && p.back() == '/') {
    rule.dir_only = true;
    while (!p.empty() && p.back() == '/') p.remove_suffix(1);
  }
  const bool anchored = p.find('/') != std::string_view::npos;
  while (!p.empty() && p.front() == '/') p.remove_prefix(1);
  rule.components = SplitComponents(p);
  if (rule.components.empty()) {
    return Status::InvalidArgument(
        fmt::format("'{}' names nothing; a pattern needs a name or a glob", pattern));
  }
  for (const std::string& c : rule.components) {
    if (c == "." || c == "..") {
      return Status::InvalidArgument(fmt::format(
          "'{}' has a '{}' component; patterns are relative to the working_dir", pattern, c));
    }
  }
  if (!anchored) rule.components.insert(rule.components.begin(), "**");
  rules_.push_back(std::move(rule));
  return Status::Ok();
}

Status ExcludeMatcher::AddIgnoreFile(std::string_view text, std::string_view source) {
  int line_no = 0;
  size_t start = 0;
  while (start < text.size()) {
    const size_t nl = text.find('\n', start);
    std::string_view line =
        text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    start = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r' || line.back() == '\t')) {
      line.remove_suffix(1);
    }
    if (line.empty() || line.front() == '#') continue;
    if (Status s = Add(line); !s.ok()) {
      return Status::InvalidArgument(fmt::format("{}:{}: {}", source, line_no, s.message()));
    }
  }
  return Status::Ok();
}

bool ExcludeMatcher::Excluded(std::string_view path, bool is_dir) const {
  const std::vector<std::string> components = SplitComponents(path);
  bool excluded = false;
  for (const Rule& rule : rules_) {
    if (rule.dir_only && !is_dir) continue;
    if (rule.negated != excluded) continue;  // only a rule that would change the answer
    if (MatchFrom(rule.components, 0, components, 0)) excluded = !rule.negated;
  }
  return excluded;
}

}  // namespace tunebus
