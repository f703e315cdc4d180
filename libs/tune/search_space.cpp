#include "libs/tune/search_space.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string_view>

#include "libs/tune/variant_generator.hpp"
#include "libs/tune/variant_tag.hpp"

namespace tunebus {
namespace {

using json = nlohmann::json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kEps = 1e-9;          // as VariantGenerator: tolerance locating multiples of q
constexpr double kNormalWindow = 5.0;  // randn's model window: mean ± 5 sd

constexpr std::array<std::string_view, 13> kSamplerNames = {
    "choice", "grid_search", "uniform",  "quniform",   "loguniform",  "qloguniform", "randn",
    "qrandn", "randint",     "qrandint", "lograndint", "qlograndint", "sample_from"};

bool IsSampler(const json& node) {
  if (!node.is_object() || node.size() != 1) return false;
  const std::string& key = node.begin().key();
  return std::find(kSamplerNames.begin(), kSamplerNames.end(), key) != kSamplerNames.end();
}

std::string Dotted(const std::vector<std::string>& keys) {
  std::string out;
  for (const std::string& key : keys) out += (out.empty() ? "" : ".") + key;
  return out;
}

int64_t FloorDiv(int64_t a, int64_t b) {  // b > 0
  const int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}
int64_t CeilDiv(int64_t a, int64_t b) {  // b > 0
  const int64_t q = a / b;
  return (a % b != 0 && a > 0) ? q + 1 : q;
}

// Fills dim's domain and model coordinates from its (validated) sampler arguments.
void Describe(const std::string& sampler, const json& args, SearchDim* dim) {
  dim->sampler = sampler;
  ParzenDim& p = dim->parzen;
  if (sampler == "sample_from") {
    dim->kind = SearchDim::Kind::kAny;
    return;
  }
  if (sampler == "choice") {
    dim->kind = SearchDim::Kind::kCategorical;
    dim->choices = args;
    p.n_choices = int64_t(args.size());
    return;
  }
  const bool is_int = sampler.find("randint") != std::string::npos;
  const bool is_log = sampler.find("log") != std::string::npos;
  const bool is_normal = sampler == "randn" || sampler == "qrandn";
  const bool has_q = sampler[0] == 'q';
  dim->kind = is_int ? SearchDim::Kind::kInt : SearchDim::Kind::kFloat;
  dim->log = is_log;
  const double a = args[0].get<double>(), b = args[1].get<double>();
  const double q = has_q ? args[2].get<double>() : (is_int ? 1.0 : 0.0);
  dim->quantum = q;
  if (is_normal) {
    dim->low = a - kNormalWindow * b;
    dim->high = a + kNormalWindow * b;
  } else {
    dim->low = a;
    dim->high = is_int && !has_q ? b - 1 : b;  // randint, lograndint: high exclusive
  }
  // The values: the multiples of q inside [low, high], as the variant generator narrows.
  if (is_int) {
    const int64_t iq = has_q ? args[2].get<int64_t>() : 1;
    const int64_t ia = args[0].get<int64_t>(), ib = args[1].get<int64_t>() - (has_q ? 0 : 1);
    dim->value_low = double(CeilDiv(ia, iq) * iq);
    dim->value_high = double(FloorDiv(ib, iq) * iq);
  } else if (q > 0) {
    dim->value_low = std::max(dim->low, std::ceil(dim->low / q - kEps) * q);
    dim->value_high = std::min(dim->high, std::floor(dim->high / q + kEps) * q);
    if (dim->value_low > dim->value_high) {  // qrandn with q wider than the window
      dim->value_low = dim->value_high = std::round(a / q) * q;
    }
  } else {
    dim->value_low = dim->low;
    dim->value_high = dim->high;
  }
  // Model bounds: a quantised value stands for the bin of width q around it.
  const double half = 0.5 * q;
  if (is_log) {
    // Ints: ln(low - 0.5) as Optuna; a float range reaching down to ~0 keeps its low end.
    const double low_end = dim->value_low - half;
    p.low = std::log(is_int || low_end > 0 ? low_end : dim->value_low);
    p.high = std::log(dim->value_high + half);
    p.step = 0;
  } else {
    p.low = dim->value_low - half;
    p.high = dim->value_high + half;
    p.step = q;
  }
  dim->prior = is_normal ? TpePrior{a, b} : TpePrior{0.5 * (p.low + p.high), p.high - p.low};
}

// Walks the param space in param-space order; visit(keys, sampler_name, args) per sampler.
template <typename Visit>
Status Walk(const json& node, std::vector<std::string>& keys, Visit& visit) {
  if (!keys.empty() && IsSampler(node))
    return visit(keys, node.begin().key(), node.begin().value());
  if (!node.is_object()) return Status::Ok();
  for (const auto& [key, value] : node.items()) {
    keys.push_back(key);
    Status s = Walk(value, keys, visit);
    keys.pop_back();
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

// The param space with each sampler replaced by value(next sampler index).
template <typename Value>
json Fill(const json& node, bool top, size_t& next, Value& value) {
  if (!top && IsSampler(node)) return value(next++);
  if (!node.is_object()) return node;
  json out = json::object();
  for (const auto& [key, child] : node.items()) out[key] = Fill(child, false, next, value);
  return out;
}

const json* Find(const json& config, const std::vector<std::string>& keys) {
  const json* node = &config;
  for (const std::string& key : keys) {
    if (!node->is_object()) return nullptr;
    auto it = node->find(key);
    if (it == node->end()) return nullptr;
    node = &*it;
  }
  return node;
}

}  // namespace

Result<SearchSpace> SearchSpace::Create(const json& param_space, const std::string& searcher) {
  if (Status s = VariantGenerator::Validate(param_space); !s.ok()) {
    return Status::InvalidArgument("param_space." + s.message());
  }
  SearchSpace space;
  space.param_space_ = param_space;
  auto collect = [&](const std::vector<std::string>& keys, const std::string& sampler,
                     const json& args) {
    if (sampler == "grid_search") {
      return Status::InvalidArgument(fmt::format(
          "param_space.{}: grid_search cannot be combined with search: {}; use search: random",
          Dotted(keys), searcher));
    }
    if (sampler == "sample_from" && searcher != "external") {
      return Status::InvalidArgument(fmt::format(
          "param_space.{}: sample_from is computed by the Python driver, for search: random "
          "(the scheduler asks the driver) or search: {{type: external}}; search: {} cannot "
          "sample it",
          Dotted(keys), searcher));
    }
    SearchDim dim;
    dim.keys = keys;
    dim.name = Dotted(keys);
    Describe(sampler, args, &dim);
    space.dims_.push_back(std::move(dim));
    return Status::Ok();
  };
  std::vector<std::string> keys;
  if (Status s = Walk(param_space, keys, collect); !s.ok()) return s;
  return space;
}

double SearchSpace::ToModel(size_t d, double v) const { return dims_[d].log ? std::log(v) : v; }

double SearchSpace::ToValue(size_t d, double t) const {
  const SearchDim& dim = dims_[d];
  if (dim.kind == SearchDim::Kind::kCategorical) {
    return std::clamp(std::round(t), 0.0, double(dim.parzen.n_choices - 1));
  }
  return Snap(d, dim.log ? std::exp(t) : t);
}

double SearchSpace::Snap(size_t d, double v) const {
  const SearchDim& dim = dims_[d];
  v = std::clamp(v, dim.value_low, dim.value_high);
  if (dim.quantum > 0) {
    v = std::round(v / dim.quantum) * dim.quantum + 0.0;  // + 0.0: no "-0"
    v = std::clamp(v, dim.value_low, dim.value_high);
  }
  return v;
}

void SearchSpace::Encode(const json& config, double* out) const {
  for (size_t d = 0; d < dims_.size(); ++d) {
    const SearchDim& dim = dims_[d];
    const json* value = Find(config, dim.keys);
    out[d] = kNaN;
    if (value == nullptr || dim.kind == SearchDim::Kind::kAny) continue;
    if (dim.kind == SearchDim::Kind::kCategorical) {
      auto it = std::find(dim.choices.begin(), dim.choices.end(), *value);
      if (it != dim.choices.end()) out[d] = double(it - dim.choices.begin());
      continue;
    }
    if (!value->is_number()) continue;
    const double v = value->get<double>();
    if (!std::isfinite(v) || (dim.log && !(v > 0))) continue;
    out[d] = std::clamp(ToModel(d, v), dim.parzen.low, dim.parzen.high);
  }
}

json SearchSpace::Config(const double* values) const {
  auto value = [&](size_t d) -> json {
    const SearchDim& dim = dims_[d];
    switch (dim.kind) {
      case SearchDim::Kind::kCategorical:
        return dim.choices[size_t(values[d])];
      case SearchDim::Kind::kInt:
        return int64_t(values[d]);
      case SearchDim::Kind::kAny:
        return nullptr;
      case SearchDim::Kind::kFloat:
        break;
    }
    return values[d];
  };
  size_t next = 0;
  return Fill(param_space_, true, next, value);
}

void SearchSpace::SetValue(json& config, size_t d, json value) const {
  json* node = &config;
  for (const std::string& key : dims_[d].keys) node = &(*node)[key];
  *node = std::move(value);
}

const json* SearchSpace::Value(const json& config, size_t d) const {
  return Find(config, dims_[d].keys);
}

std::string SearchSpace::Tag(const json& config) const {
  std::string tag;
  for (const SearchDim& dim : dims_) {
    const json* value = Find(config, dim.keys);
    if (!tag.empty()) tag += ",";
    tag += dim.name + "=" + (value != nullptr ? TagValue(*value) : "null");
  }
  return tag;
}

json SearchSpace::RandomConfig(uint64_t seed) const {
  return VariantGenerator(param_space_, 1, seed).Next().config;
}

}  // namespace tunebus
