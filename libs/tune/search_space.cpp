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

// A choice with conditional branches (maps holding samplers).
bool IsConditionalChoice(const std::string& sampler, const json& args) {
  return sampler == "choice" && std::any_of(args.begin(), args.end(), VariantGenerator::IsBranch);
}

// Collects the dims in walk order: param-space order, a conditional choice's branches' samplers
// right after it. Each dim gets its group (0: unconditional; a branch's: numbered as found, so
// a parent's group comes before its branches') and its parent / branch as walk indices.
struct DimCollector {
  const std::string& searcher;
  std::vector<SearchDim> dims;
  std::vector<int32_t> group_of;
  int32_t groups = 1;

  Status Node(const json& node, std::vector<std::string>& keys, bool top, int32_t group,
              int32_t parent, int32_t branch) {
    if (!top && IsSampler(node)) {
      return Sampler(keys, node.begin().key(), node.begin().value(), group, parent, branch);
    }
    if (!node.is_object()) return Status::Ok();
    for (const auto& [key, value] : node.items()) {
      keys.push_back(key);
      Status s = Node(value, keys, false, group, parent, branch);
      keys.pop_back();
      if (!s.ok()) return s;
    }
    return Status::Ok();
  }

  Status Sampler(std::vector<std::string>& keys, const std::string& sampler, const json& args,
                 int32_t group, int32_t parent, int32_t branch) {
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
    const bool conditional = IsConditionalChoice(sampler, args);
    if (conditional && searcher != "tpe" && searcher != "bench") {
      return Status::InvalidArgument(fmt::format(
          "param_space.{}.choice: conditional branches (samplers inside a choice) need search: "
          "tpe or search: random; search: {} models a fixed set of params",
          Dotted(keys), searcher));
    }
    SearchDim dim;
    dim.keys = keys;
    dim.name = Dotted(keys);
    dim.parent = parent;
    dim.branch = branch;
    Describe(sampler, args, &dim);
    const int32_t self = int32_t(dims.size());
    dims.push_back(std::move(dim));
    group_of.push_back(group);
    if (!conditional) return Status::Ok();
    for (size_t i = 0; i < args.size(); ++i) {
      if (!VariantGenerator::IsBranch(args[i])) continue;
      if (Status s = Node(args[i], keys, true, groups++, self, int32_t(i)); !s.ok()) return s;
    }
    return Status::Ok();
  }
};

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
  DimCollector collector{searcher, {}, {}};
  std::vector<std::string> keys;
  if (Status s = collector.Node(param_space, keys, true, 0, -1, -1); !s.ok()) return s;
  // Dims by group (stable: param-space order within one); parents renumbered.
  const size_t n = collector.dims.size();
  std::vector<size_t> order(n);
  for (size_t w = 0; w < n; ++w) order[w] = w;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return collector.group_of[a] < collector.group_of[b];
  });
  SearchSpace space;
  space.param_space_ = param_space;
  space.walk_order_.resize(n);
  for (size_t d = 0; d < n; ++d) space.walk_order_[order[d]] = d;
  for (size_t d = 0; d < n; ++d) {
    SearchDim dim = std::move(collector.dims[order[d]]);
    if (dim.parent >= 0) dim.parent = int32_t(space.walk_order_[size_t(dim.parent)]);
    const int32_t group = collector.group_of[order[d]];
    if (d == 0 || group != collector.group_of[order[d - 1]]) {
      space.groups_.push_back({d, 0, dim.parent, dim.branch});
    }
    ++space.groups_.back().count;
    space.dims_.push_back(std::move(dim));
  }
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
    out[d] = kNaN;
    if (!Active(out, d)) continue;  // the parent (an earlier dim) is already encoded
    const json* value = Find(config, dim.keys);
    if (value == nullptr || dim.kind == SearchDim::Kind::kAny) continue;
    if (dim.kind == SearchDim::Kind::kCategorical) {
      if (auto index = VariantGenerator::BranchOf(dim.choices, *value)) out[d] = double(*index);
      continue;
    }
    if (!value->is_number()) continue;
    const double v = value->get<double>();
    if (!std::isfinite(v) || (dim.log && !(v > 0))) continue;
    out[d] = std::clamp(ToModel(d, v), dim.parzen.low, dim.parzen.high);
  }
}

json SearchSpace::Fill(const json& node, bool top, size_t& walk, const double* values,
                       bool emit) const {
  if (!top && IsSampler(node)) {
    const size_t d = walk_order_[walk++];
    const SearchDim& dim = dims_[d];
    if (dim.kind == SearchDim::Kind::kCategorical) {
      const size_t picked = emit ? size_t(values[d]) : 0;
      json out = emit ? dim.choices[picked] : json();
      for (size_t i = 0; i < dim.choices.size(); ++i) {
        if (!VariantGenerator::IsBranch(dim.choices[i])) continue;
        json branch = Fill(dim.choices[i], true, walk, values, emit && i == picked);
        if (emit && i == picked) out = std::move(branch);
      }
      return out;
    }
    if (!emit || dim.kind == SearchDim::Kind::kAny) return nullptr;
    if (dim.kind == SearchDim::Kind::kInt) return int64_t(values[d]);
    return values[d];
  }
  if (!node.is_object()) return node;
  json out = json::object();
  for (const auto& [key, child] : node.items()) out[key] = Fill(child, false, walk, values, emit);
  return out;
}

json SearchSpace::Config(const double* values) const {
  size_t walk = 0;
  return Fill(param_space_, true, walk, values, true);
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
  std::vector<double> row(dims_.size());
  Encode(config, row.data());
  std::string tag;
  for (const size_t d : walk_order_) {
    if (!Active(row.data(), d)) continue;
    const SearchDim& dim = dims_[d];
    const json* value = Find(config, dim.keys);
    std::string text = value != nullptr ? TagValue(*value) : "null";
    if (dim.kind == SearchDim::Kind::kCategorical && !std::isnan(row[d])) {
      const json& branch = dim.choices[size_t(row[d])];
      if (VariantGenerator::IsBranch(branch)) text = BranchTag(branch, size_t(row[d]));
    }
    if (!tag.empty()) tag += ",";
    tag += dim.name + "=" + text;
  }
  return tag;
}

json SearchSpace::RandomConfig(uint64_t seed) const {
  return VariantGenerator(param_space_, 1, seed).Next().config;
}

}  // namespace tunebus
