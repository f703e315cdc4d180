#include "libs/tune/variant_generator.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <optional>
#include <sstream>
#include <string_view>
#include <vector>

#include "libs/core/fields.hpp"
#include "libs/core/near_miss.hpp"
#include "libs/tune/variant_tag.hpp"

namespace tunebus {
namespace {

using json = nlohmann::json;

// One sampler kind. Numeric samplers take [a, b(, q)(, base)] where (a, b) is (low, high), or
// (mean, sd) for the normal ones; `base` is optional and only for log samplers.
struct SamplerInfo {
  std::string_view name;
  bool is_list;    // choice / grid_search: a non-empty list of literal values
  bool is_grid;    // grid_search
  bool is_int;     // integer low/high/q and integer results
  bool is_log;     // log-uniform, optional trailing base (default 10)
  bool is_normal;  // (mean, sd) instead of (low, high)
  bool has_q;      // third argument q > 0
};

constexpr SamplerInfo kSamplers[] = {
    {"choice", true, false, false, false, false, false},
    {"grid_search", true, true, false, false, false, false},
    {"uniform", false, false, false, false, false, false},
    {"quniform", false, false, false, false, false, true},
    {"loguniform", false, false, false, true, false, false},
    {"qloguniform", false, false, false, true, false, true},
    {"randn", false, false, false, false, true, false},
    {"qrandn", false, false, false, false, true, true},
    {"randint", false, false, true, false, false, false},
    {"qrandint", false, false, true, false, false, true},
    {"lograndint", false, false, true, true, false, false},
    {"qlograndint", false, false, true, true, false, true},
};

constexpr double kEps = 1e-9;  // tolerance when locating multiples of a float q

const SamplerInfo* AsSampler(const json& node) {
  if (!node.is_object() || node.size() != 1) return nullptr;
  const std::string& key = node.begin().key();
  for (const SamplerInfo& s : kSamplers) {
    if (s.name == key) return &s;
  }
  return nullptr;
}

bool ContainsSampler(const json& node) {
  if (AsSampler(node) != nullptr) return true;
  if (node.is_structured()) {
    for (const json& child : node) {
      if (ContainsSampler(child)) return true;
    }
  }
  return false;
}

bool ContainsGridOrSampleFrom(const json& node) {
  if (node.is_object() && node.size() == 1 &&
      (node.begin().key() == "grid_search" || node.begin().key() == "sample_from")) {
    return true;
  }
  if (node.is_structured()) {
    for (const json& child : node) {
      if (ContainsGridOrSampleFrom(child)) return true;
    }
  }
  return false;
}

std::string Join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

std::string ArgName(const SamplerInfo& s, size_t i) {
  static constexpr std::string_view kRange[] = {"low", "high", "q", "base"};
  static constexpr std::string_view kNormal[] = {"mean", "sd", "q"};
  if (i == 2 && !s.has_q) return "base";
  return std::string(s.is_normal ? kNormal[i] : kRange[i]);
}

std::string Signature(const SamplerInfo& s) {
  std::string sig = s.is_normal ? "[mean, sd" : "[low, high";
  if (s.has_q) sig += ", q";
  if (s.is_log) sig += "(, base)";
  return sig + "]";
}

int64_t FloorDiv(int64_t a, int64_t b) {  // b > 0
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}
int64_t CeilDiv(int64_t a, int64_t b) {  // b > 0
  int64_t q = a / b;
  return (a % b != 0 && a > 0) ? q + 1 : q;
}

// The numeric arguments of a validated sampler.
struct NumArgs {
  double a = 0, b = 0, q = 0, base = 10;  // a/b: low/high or mean/sd
  int64_t ia = 0, ib = 0, iq = 0;         // the same for int samplers
};

NumArgs ReadArgs(const SamplerInfo& s, const json& args) {
  NumArgs n;
  n.a = args[0].get<double>();
  n.b = args[1].get<double>();
  if (s.has_q) n.q = args[2].get<double>();
  size_t base_index = s.has_q ? 3 : 2;
  if (s.is_log && args.size() > base_index) n.base = args[base_index].get<double>();
  if (s.is_int) {
    n.ia = fields::GetInteger<int64_t>(args[0]);
    n.ib = fields::GetInteger<int64_t>(args[1]);
    if (s.has_q) n.iq = fields::GetInteger<int64_t>(args[2]);
  }
  return n;
}

Status Invalid(const std::string& where, const std::string& why) {
  return Status::InvalidArgument(where + ": " + why);
}

Status CheckNumeric(const SamplerInfo& s, const json& args, const std::string& where) {
  const size_t min_args = 2 + (s.has_q ? 1 : 0);
  const size_t max_args = min_args + (s.is_log ? 1 : 0);
  if (!args.is_array()) {
    return Invalid(where, fmt::format("expected a list {}, got {}", Signature(s), args.dump()));
  }
  if (args.size() < min_args || args.size() > max_args) {
    std::string count = min_args == max_args ? std::to_string(min_args)
                                             : fmt::format("{} or {}", min_args, max_args);
    return Invalid(
        where, fmt::format("expects {} arguments {}, got {}", count, Signature(s), args.size()));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const json& a = args[i];
    const std::string name = ArgName(s, i);
    if (s.is_int && name != "base") {
      if (!a.is_number_integer()) {
        return Invalid(where, fmt::format("{} must be an integer, got {}", name, a.dump()));
      }
      if (a.is_number_unsigned() &&
          fields::GetInteger<uint64_t>(a) > uint64_t(std::numeric_limits<int64_t>::max())) {
        return Invalid(where, fmt::format("{} does not fit in 64 bits, got {}", name, a.dump()));
      }
    } else if (!a.is_number()) {
      return Invalid(where, fmt::format("{} must be a number, got {}", name, a.dump()));
    } else if (!std::isfinite(a.get<double>())) {
      return Invalid(where, fmt::format("{} must be finite, got {}", name, a.dump()));
    }
  }
  const NumArgs n = ReadArgs(s, args);
  const std::string a0 = args[0].dump(), a1 = args[1].dump();
  if (s.is_normal) {
    if (!(n.b > 0)) return Invalid(where, fmt::format("sd must be > 0, got {}", a1));
  } else {
    if (s.is_log && !(n.a > 0)) return Invalid(where, fmt::format("low must be > 0, got {}", a0));
    bool ordered = s.is_int ? n.ia < n.ib : n.a < n.b;
    if (!ordered) {
      return Invalid(where, fmt::format("low must be < high, got low={}, high={}", a0, a1));
    }
  }
  if (s.has_q && !(n.q > 0)) {
    return Invalid(where, fmt::format("q must be > 0, got {}", args[2].dump()));
  }
  if (s.is_log && (!(n.base > 0) || n.base == 1)) {
    return Invalid(where, fmt::format("base must be > 0 and != 1, got {}", args.back().dump()));
  }
  if (s.has_q && !s.is_normal) {
    bool any = s.is_int ? CeilDiv(n.ia, n.iq) <= FloorDiv(n.ib, n.iq)
                        : std::ceil(n.a / n.q - kEps) <= std::floor(n.b / n.q + kEps);
    if (!any) {
      return Invalid(where,
                     fmt::format("no multiple of q={} lies in [{}, {}]", args[2].dump(), a0, a1));
    }
  }
  return Status::Ok();
}

Status CheckBranch(const json& value, const std::string& where);

Status CheckSampler(const SamplerInfo& s, const json& args, const std::string& where,
                    int64_t* grid_size) {
  if (!s.is_list) return CheckNumeric(s, args, where);
  if (!args.is_array()) {
    return Invalid(where, fmt::format("expected a list of values, got {}", args.dump()));
  }
  if (args.empty()) return Invalid(where, "needs at least one value, got an empty list");
  if (s.is_grid && ContainsSampler(args)) {
    return Invalid(where, "values are literals; a sampler inside them is not supported");
  }
  if (!s.is_grid) {
    for (size_t i = 0; i < args.size(); ++i) {
      if (Status st = CheckBranch(args[i], fmt::format("{}[{}]", where, i)); !st.ok()) return st;
    }
  }
  if (s.is_grid) {
    constexpr int64_t kMaxGrid = int64_t{1} << 40;
    if (*grid_size > kMaxGrid / int64_t(args.size())) {
      return Invalid(where,
                     fmt::format("too many grid_search combinations (more than {})", kMaxGrid));
    }
    *grid_size *= int64_t(args.size());
  }
  return Status::Ok();
}

// `path` is the dotted key path, empty for the param space itself (which is never a sampler).
// A one-key map whose key is a sampler's name with a typo: the name meant, else nullopt.
std::optional<std::string> MisspelledSampler(const json& node) {
  if (!node.is_object() || node.size() != 1) return std::nullopt;
  std::vector<std::string> names;
  for (const SamplerInfo& s : kSamplers) names.emplace_back(s.name);
  return NearMiss(node.begin().key(), names, 2);
}

// `{sample_from: ...}`: a placeholder the Python driver fills (SearchSpace's kAny dims).
bool IsSampleFrom(const json& node) {
  return node.is_object() && node.size() == 1 && node.begin().key() == "sample_from";
}

Status ValidateNode(const json& node, const std::string& path, int64_t* grid_size) {
  if (!path.empty() && IsSampleFrom(node)) {
    if (node.begin().value() != "driver") {
      return Invalid(Join(path, "sample_from"),
                     "expected driver (the Python driver's tune.sample_from fills it), got " +
                         node.begin().value().dump());
    }
    return Status::Ok();
  }
  const SamplerInfo* s = path.empty() ? nullptr : AsSampler(node);
  if (s != nullptr) {
    return CheckSampler(*s, node.begin().value(), Join(path, std::string(s->name)), grid_size);
  }
  if (auto meant = path.empty() ? std::nullopt : MisspelledSampler(node)) {
    return Invalid(Join(path, node.begin().key()),
                   "not a sampling function; did you mean " + *meant +
                       "? (a constant map needs another key beside it)");
  }
  if (node.is_object()) {
    for (const auto& [key, value] : node.items()) {
      if (key.empty()) return Invalid(path.empty() ? "(top level)" : path, "a key is empty");
      Status st = ValidateNode(value, Join(path, key), grid_size);
      if (!st.ok()) return st;
    }
  } else if (node.is_array() && ContainsSampler(node)) {
    return Invalid(path, "a sampler inside a list is not supported");
  }
  return Status::Ok();
}

// A value of a choice: a literal, or a map holding samplers (a conditional branch: its samplers
// are drawn only when the choice picks it). A branch holds no grid_search (a grid is not
// conditional) and no sample_from. A map without samplers is a literal, checked too so a
// misspelt sampler in it is named.
Status CheckBranch(const json& value, const std::string& where) {
  if (!ContainsSampler(value) && !IsSampleFrom(value)) {
    int64_t grid_size = 1;
    return value.is_object() ? ValidateNode(value, where, &grid_size) : Status::Ok();
  }
  if (!value.is_object() || AsSampler(value) != nullptr || IsSampleFrom(value)) {
    return Invalid(where,
                   "a sampler is a choice value only inside a map (a conditional branch, e.g. "
                   "{type: adam, lr: {loguniform: [1e-5, 1e-1]}}); values are literals otherwise");
  }
  int64_t grid_size = 1;
  if (Status st = ValidateNode(value, where, &grid_size); !st.ok()) return st;
  if (ContainsGridOrSampleFrom(value)) {
    return Invalid(where, "grid_search and sample_from are not supported inside a choice");
  }
  return Status::Ok();
}

// ---- Distributions from raw mt19937_64 output (portable across standard libraries). ----

double Uniform01(std::mt19937_64& rng) {  // [0, 1)
  return double(rng() >> 11) * 0x1.0p-53;
}

double UniformReal(std::mt19937_64& rng, double low, double high) {
  double u = Uniform01(rng);
  return std::clamp(low * (1 - u) + high * u, low, high);  // no overflow for wide ranges
}

// Uniform in [0, n); n == 0 means the full 2^64 range.
uint64_t UniformIndex(std::mt19937_64& rng, uint64_t n) {
  if (n == 0) return rng();
  const uint64_t threshold = (0 - n) % n;  // rejects the biased low values
  uint64_t r;
  do {
    r = rng();
  } while (r < threshold);
  return r % n;
}

// Uniform integer in [low, high] (inclusive). REQUIRES: low <= high.
int64_t UniformInt(std::mt19937_64& rng, int64_t low, int64_t high) {
  uint64_t span = uint64_t(high) - uint64_t(low) + 1;  // 0 == 2^64
  return int64_t(uint64_t(low) + UniformIndex(rng, span));
}

double Normal(std::mt19937_64& rng) {  // Box-Muller, one standard normal per two draws
  double u1 = 1.0 - Uniform01(rng);    // (0, 1]
  double u2 = Uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double LogUniform(std::mt19937_64& rng, double low, double high, double base) {
  const double lb = std::log(base);
  double lo = std::log(low) / lb, hi = std::log(high) / lb;
  if (hi < lo) std::swap(lo, hi);  // base < 1
  return std::clamp(std::pow(base, UniformReal(rng, lo, hi)), low, high);
}

// round(x / q) * q; "+ 0.0" turns -0.0 into 0.0 so tags never read "-0".
double Quantize(double x, double q) { return std::round(x / q) * q + 0.0; }

json Draw(const SamplerInfo& s, const json& args, std::mt19937_64& rng) {
  if (s.is_list) return args[UniformIndex(rng, args.size())];
  const NumArgs n = ReadArgs(s, args);
  if (s.is_normal) {
    double x = n.a + n.b * Normal(rng);
    return s.has_q ? Quantize(x, n.q) : x;
  }
  if (!s.is_int) {
    double low = n.a, high = n.b;
    if (s.has_q) {  // narrow to the multiples of q inside [low, high], as Ray
      low = std::max(low, std::ceil(n.a / n.q - kEps) * n.q);
      high = std::max(low, std::min(high, std::floor(n.b / n.q + kEps) * n.q));
    }
    double x = s.is_log ? LogUniform(rng, low, high, n.base) : UniformReal(rng, low, high);
    return s.has_q ? std::clamp(Quantize(x, n.q), n.a, n.b) : x;
  }
  if (!s.is_log) {
    if (!s.has_q) return UniformInt(rng, n.ia, n.ib - 1);  // randint: high exclusive
    int64_t k = UniformInt(rng, CeilDiv(n.ia, n.iq), FloorDiv(n.ib, n.iq));
    return k * n.iq;
  }
  if (!s.has_q) {  // lograndint: floor(loguniform), high exclusive
    double x = std::floor(LogUniform(rng, double(n.ia), double(n.ib), n.base));
    if (x >= double(n.ib)) return n.ib - 1;
    return std::max(n.ia, int64_t(x));
  }
  // qlograndint: log-uniform over the multiples of q in [low, high], rounded to q.
  const int64_t k_low = CeilDiv(n.ia, n.iq), k_high = FloorDiv(n.ib, n.iq);
  double x = LogUniform(rng, double(k_low) * n.q, double(k_high) * n.q, n.base);
  double k = std::clamp(std::round(x / n.q), double(k_low), double(k_high));
  return int64_t(k) * n.iq;
}

std::string Dotted(const std::vector<std::string>& keys) {
  std::string out;
  for (const std::string& key : keys) out = Join(out, key);
  return out;
}

// Walks the spec in param-space order calling visit(keys, sampler, args) for every sampler and
// returns the spec with each sampler replaced by what visit returned. `keys` is the key path.
// `top`: `spec` is the param space or a conditional branch (a map, never a sampler itself).
template <typename Visit>
json Resolve(const json& spec, std::vector<std::string>& keys, Visit& visit, bool top) {
  if (!top) {
    if (const SamplerInfo* s = AsSampler(spec)) return visit(keys, *s, spec.begin().value());
  }
  if (!spec.is_object()) return spec;
  json out = json::object();
  for (const auto& [key, value] : spec.items()) {
    keys.push_back(key);
    out[key] = Resolve(value, keys, visit, false);
    keys.pop_back();
  }
  return out;
}

}  // namespace

VariantGenerator::VariantGenerator(nlohmann::json param_space, int64_t num_samples, uint64_t seed,
                                   int64_t max_pending)
    : param_space_(std::move(param_space)),
      num_samples_(num_samples),
      seed_(seed),
      max_pending_(std::max<int64_t>(1, max_pending)),
      rng_(seed) {
  auto collect = [this](std::vector<std::string>& keys, const SamplerInfo& s, const json& args) {
    if (s.is_grid) {
      grid_axes_.emplace_back(keys, args);
      grid_size_ *= int64_t(args.size());
    }
    return json();
  };
  std::vector<std::string> keys;
  (void)Resolve(param_space_, keys, collect, true);
}

namespace {

void CollectSampleFrom(const json& node, std::vector<std::string>& prefix,
                       std::vector<std::vector<std::string>>& out) {
  for (const auto& [key, value] : node.items()) {
    prefix.push_back(key);
    if (IsSampleFrom(value)) {
      out.push_back(prefix);
    } else if (value.is_object() && AsSampler(value) == nullptr) {
      CollectSampleFrom(value, prefix, out);
    }
    prefix.pop_back();
  }
}

}  // namespace

std::vector<std::vector<std::string>> VariantGenerator::SampleFromPaths(
    const nlohmann::json& param_space) {
  std::vector<std::vector<std::string>> out;
  std::vector<std::string> prefix;
  if (param_space.is_object()) CollectSampleFrom(param_space, prefix, out);
  return out;
}

Status VariantGenerator::Validate(const nlohmann::json& param_space) {
  if (!param_space.is_object()) {
    return Status::InvalidArgument("param space must be an object, got " + param_space.dump());
  }
  int64_t grid_size = 1;
  return ValidateNode(param_space, "", &grid_size);
}

bool VariantGenerator::HasNext() const { return num_samples_ < 0 || produced_ < Total(); }

int64_t VariantGenerator::Total() const {
  if (num_samples_ < 0) return -1;
  if (num_samples_ > 0 && grid_size_ > std::numeric_limits<int64_t>::max() / num_samples_) {
    return std::numeric_limits<int64_t>::max();  // saturates; never reached in practice
  }
  return grid_size_ * num_samples_;
}

Variant VariantGenerator::Next() {
  // First axis fastest: axis i picks (grid_index / product of earlier sizes) % size_i.
  int64_t rest = produced_ % grid_size_;
  std::vector<size_t> pick;
  for (const auto& axis : grid_axes_) {
    int64_t size = int64_t(axis.second.size());
    pick.push_back(size_t(rest % size));
    rest /= size;
  }
  Variant variant;
  // Draws in param-space order; a choice that picks a conditional branch draws the branch's
  // samplers right after it (and only then), under the choice's key path.
  struct Drawer {
    Variant& variant;
    std::mt19937_64& rng;
    const std::vector<size_t>& pick;
    size_t next_axis = 0;
    void Tag(const std::vector<std::string>& keys, const std::string& value) {
      if (!variant.tag.empty()) variant.tag += ",";
      variant.tag += Dotted(keys) + "=" + value;
    }
    json operator()(std::vector<std::string>& keys, const SamplerInfo& s, const json& args) {
      if (s.is_grid) {
        json value = args[pick[next_axis++]];
        Tag(keys, TagValue(value));
        return value;
      }
      if (s.is_list) {
        const size_t index = size_t(UniformIndex(rng, args.size()));
        const json& branch = args[index];
        if (!ContainsSampler(branch)) {
          Tag(keys, TagValue(branch));
          return branch;
        }
        Tag(keys, BranchTag(branch, index));
        return Resolve(branch, keys, *this, /*top=*/true);
      }
      json value = Draw(s, args, rng);
      Tag(keys, TagValue(value));
      return value;
    }
  };
  Drawer draw{variant, rng_, pick};
  std::vector<std::string> keys;
  variant.config = Resolve(param_space_, keys, draw, true);
  ++produced_;
  return variant;
}

nlohmann::json VariantGenerator::SaveState() const {
  std::ostringstream rng_text;
  rng_text << rng_;
  return {{"produced", produced_}, {"rng", rng_text.str()}};
}

Status VariantGenerator::RestoreState(const nlohmann::json& state) {
  if (state.is_null()) {
    rng_.seed(seed_);
    produced_ = 0;
    return Status::Ok();
  }
  if (!state.is_object() || !state.contains("produced") || !state.contains("rng") ||
      !state["produced"].is_number_integer() || !state["rng"].is_string()) {
    return Status::InvalidArgument(
        "variant generator state must be {\"produced\": int, \"rng\": string}, got " +
        state.dump());
  }
  const int64_t produced = fields::GetInteger<int64_t>(state["produced"]);
  if (produced < 0 || (num_samples_ >= 0 && produced > Total())) {
    return Status::InvalidArgument(
        fmt::format("variant generator state: produced={} is outside [0, {}]", produced,
                    num_samples_ >= 0 ? Total() : std::numeric_limits<int64_t>::max()));
  }
  std::istringstream in(state["rng"].get<std::string>());
  std::mt19937_64 rng;
  in >> rng;
  if (in.fail()) {
    return Status::InvalidArgument("variant generator state: rng is not an mt19937_64 state");
  }
  rng_ = rng;
  produced_ = produced;
  return Status::Ok();
}

Status VariantGenerator::SetSearchProperties(const std::string& metric, const std::string& mode,
                                             const nlohmann::json& param_space) {
  (void)metric;
  (void)mode;
  if (param_space != param_space_) {
    return Status::InvalidArgument("param_space: not the one the variant generator was built with");
  }
  return Validate(param_space);
}

Suggestion VariantGenerator::Suggest(const std::string& trial_id) {
  (void)trial_id;
  if (!HasNext()) return Suggestion::Finished();
  Variant v = Next();
  return Suggestion::Config(std::move(v.config), std::move(v.tag));
}

nlohmann::json VariantGenerator::Describe() const {
  return {{"searcher", name()}, {"suggested", produced_}, {"total", Total()}};
}

bool VariantGenerator::IsSampler(const nlohmann::json& node) { return AsSampler(node) != nullptr; }

bool VariantGenerator::IsBranch(const nlohmann::json& choice_value) {
  return ContainsSampler(choice_value);
}

namespace {

std::string Listed(const json& values) {
  std::string out;
  for (const json& v : values) out += (out.empty() ? "" : ", ") + v.dump();
  return "[" + out + "]";
}

Status CheckPointValue(const SamplerInfo& s, const json& args, const json& value,
                       const std::string& where) {
  if (s.is_list) {
    if (VariantGenerator::BranchOf(args, value)) return Status::Ok();
    return Invalid(where, fmt::format("{} is not one of the {} values {}{}", value.dump(), s.name,
                                      Listed(args),
                                      ContainsSampler(args) ? " (nor in a branch's domain)" : ""));
  }
  if (s.is_int ? !value.is_number_integer() : !value.is_number()) {
    return Invalid(where,
                   fmt::format("must be {} for {} {}, got {}", s.is_int ? "an integer" : "a number",
                               s.name, args.dump(), value.dump()));
  }
  if (s.is_normal) return Status::Ok();
  const NumArgs n = ReadArgs(s, args);
  const double x = value.get<double>();
  const bool high_excluded = s.is_int && !s.has_q;  // randint, lograndint: [low, high)
  const bool inside = x >= n.a && (high_excluded ? x < n.b : x <= n.b);
  if (!inside) {
    return Invalid(where, fmt::format("{} is outside [{}, {}{} ({})", value.dump(), args[0].dump(),
                                      args[1].dump(), high_excluded ? ")" : "]", s.name));
  }
  return Status::Ok();
}

Status ValidatePointNode(const json& space, const json& point, const std::string& path) {
  for (const auto& [key, value] : point.items()) {
    const std::string where = Join(path, key);
    if (!space.contains(key)) {
      std::vector<std::string> keys;
      for (const auto& [k, v] : space.items()) keys.push_back(k);
      const auto meant = NearMiss(key, keys);
      return Invalid(where,
                     fmt::format("not in the param space{} (its keys{}: {})",
                                 meant ? "; did you mean " + *meant + "?" : "",
                                 path.empty() ? "" : " under " + path, fmt::join(keys, ", ")));
    }
    const json& node = space[key];
    if (const SamplerInfo* s = AsSampler(node)) {
      if (Status st = CheckPointValue(*s, node.begin().value(), value, where); !st.ok()) return st;
    } else if (node.is_object()) {
      if (!value.is_object()) {
        return Invalid(where, "expected a map (the param space has one here), got " + value.dump());
      }
      if (Status st = ValidatePointNode(node, value, where); !st.ok()) return st;
    }
  }
  return Status::Ok();
}

// True when `value` (a map) can be what conditional branch `branch` resolved to: every key of
// it is the branch's, a sampler's value in its domain, a constant's equal, maps recursing.
// Keys of the branch that `value` lacks are allowed (a partial point).
bool MatchesBranch(const json& branch, const json& value) {
  if (!value.is_object()) return false;
  for (const auto& [key, v] : value.items()) {
    auto it = branch.find(key);
    if (it == branch.end()) return false;
    if (const SamplerInfo* s = AsSampler(*it)) {
      if (!CheckPointValue(*s, it->begin().value(), v, key).ok()) return false;
    } else if (it->is_object() && ContainsSampler(*it)) {
      if (!MatchesBranch(*it, v)) return false;
    } else if (*it != v) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::optional<size_t> VariantGenerator::BranchOf(const nlohmann::json& choices,
                                                 const nlohmann::json& value) {
  for (size_t i = 0; i < choices.size(); ++i) {
    const json& branch = choices[i];
    if (ContainsSampler(branch) ? MatchesBranch(branch, value) : branch == value) return i;
  }
  return std::nullopt;
}

Status VariantGenerator::ValidatePoint(const nlohmann::json& param_space,
                                       const nlohmann::json& point) {
  if (!point.is_object()) {
    return Status::InvalidArgument("a point is a map of config keys to values, got " +
                                   point.dump());
  }
  return ValidatePointNode(param_space, point, "");
}

namespace {

// The constant leaves of a conditional branch, in param-space order.
void ConstantLeaves(const json& node, std::vector<const json*>* out) {
  for (const auto& [key, value] : node.items()) {
    if (AsSampler(value) != nullptr) continue;
    if (value.is_object()) {
      ConstantLeaves(value, out);
    } else {
      out->push_back(&value);
    }
  }
}

}  // namespace

std::string BranchTag(const json& branch, size_t index) {
  std::vector<const json*> leaves;
  if (branch.is_object()) ConstantLeaves(branch, &leaves);
  return leaves.size() == 1 ? TagValue(*leaves[0]) : std::to_string(index);
}

std::string TagValue(const json& v) {
  if (v.is_number_float()) return fmt::format("{:.4g}", v.get<double>());
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    std::replace(s.begin(), s.end(), '/', '_');
    return s;
  }
  return v.dump();
}

}  // namespace tunebus
