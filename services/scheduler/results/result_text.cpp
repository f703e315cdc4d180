#include "services/scheduler/results/result_text.hpp"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <cmath>
#include <iterator>

#include "libs/core/csv.hpp"

namespace tunebus {

namespace {

std::string_view Str(const msgpack::object& o) { return {o.via.str.ptr, o.via.str.size}; }

// Ray Tune's flatten_dict(delimiter="/"): nested objects become "outer/inner" keys, an empty
// one disappears.
void FlattenConfig(const std::string& prefix, const nlohmann::json& object,
                   std::vector<std::pair<std::string, std::string>>& cells) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    std::string column = prefix + "/" + it.key();
    const nlohmann::json& value = it.value();
    if (value.is_object()) {
      FlattenConfig(column, value, cells);
    } else if (value.is_string()) {
      cells.emplace_back(std::move(column), value.get_ref<const std::string&>());
    } else {
      cells.emplace_back(std::move(column),
                         value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
  }
}

}  // namespace

ConfigText::ConfigText(const nlohmann::json& config) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  const nlohmann::json& object = config.is_object() ? config : kEmpty;
  json = object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  FlattenConfig("config", object, cells);
}

std::string_view ResultText::View(Src src, uint32_t begin, uint32_t end) const {
  switch (src) {
    case Src::kBytes:
      return bytes_.substr(begin, end - begin);
    case Src::kText:
      return std::string_view(text_).substr(begin, end - begin);
    case Src::kArena:
      return std::string_view(arena_).substr(begin, end - begin);
    case Src::kConfigKey:
      return config_->cells[begin].first;
    case Src::kConfigCell:
      return config_->cells[begin].second;
  }
  return {};
}

namespace {

// A leaf's number for TensorBoard: numbers and booleans (Ray Tune's VALID_SUMMARY_TYPES, where a
// Python bool is an int), NaN left out as Ray leaves it out.
bool NumberOf(const msgpack::object& o, double& number) {
  switch (o.type) {
    case msgpack::type::BOOLEAN:
      number = o.via.boolean ? 1 : 0;
      return true;
    case msgpack::type::POSITIVE_INTEGER:
      number = double(o.via.u64);
      return true;
    case msgpack::type::NEGATIVE_INTEGER:
      number = double(o.via.i64);
      return true;
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64:
      number = o.via.f64;
      return !std::isnan(number);
    default:
      return false;
  }
}

}  // namespace

void ResultText::AddLeaf(Src key_src, uint32_t key_begin, uint32_t key_end,
                         const msgpack::object& value, Src value_src, uint32_t value_begin,
                         uint32_t value_end) {
  Cell c{key_src, value_src, false, key_begin, key_end, value_begin, value_end, 0.0};
  if (value.type == msgpack::type::STR) {
    const std::string_view s = Str(value);  // points into bytes_ (unpacked without copies)
    c.value_src = Src::kBytes;
    c.value_begin = uint32_t(s.data() - bytes_.data());
    c.value_end = uint32_t(c.value_begin + s.size());
  } else {
    c.is_number = NumberOf(value, c.number);
  }
  cells_.push_back(c);
}

void ResultText::AddNestedCells(const std::string& prefix, const msgpack::object& map) {
  for (uint32_t i = 0; i < map.via.map.size; ++i) {
    const msgpack::object_kv& kv = map.via.map.ptr[i];
    if (kv.key.type != msgpack::type::STR) continue;  // results come from JSON: never
    std::string column = prefix;
    column.push_back('/');
    column.append(Str(kv.key));
    if (kv.val.type == msgpack::type::MAP) {
      AddNestedCells(column, kv.val);
      continue;
    }
    const uint32_t key_begin = uint32_t(arena_.size());
    arena_.append(column);
    const uint32_t key_end = uint32_t(arena_.size());
    AppendJson(kv.val, arena_);
    AddLeaf(Src::kArena, key_begin, key_end, kv.val, Src::kArena, key_end, uint32_t(arena_.size()));
  }
}

void ResultText::AddConfig() {
  Field f{};
  f.quoted_key_begin = uint32_t(text_.size());
  text_ += "\"config\"";
  f.value_begin = uint32_t(text_.size());
  text_ += config_->json;
  f.value_end = uint32_t(text_.size());
  fields_.push_back(f);
  for (uint32_t i = 0; i < config_->cells.size(); ++i) {
    cells_.push_back(Cell{Src::kConfigKey, Src::kConfigCell, false, i, i, i, i, 0.0});
  }
}

bool ResultText::Decode(std::string_view bytes, const ConfigText* config) {
  zone_.clear();
  fields_.clear();
  cells_.clear();
  text_.clear();
  arena_.clear();
  bytes_ = bytes;
  config_ = config;
  msgpack::object result;
  try {
    // Strings point into `bytes` (no copy into the zone): the result is formatted before the
    // caller's bytes go away.
    result = msgpack::unpack(zone_, bytes.data(), bytes.size(),
                             [](msgpack::type::object_type, std::size_t, void*) { return true; });
  } catch (const std::exception&) {
    return false;
  }
  if (result.type != msgpack::type::MAP) return false;
  bool config_placed = config_ == nullptr;
  for (uint32_t i = 0; i < result.via.map.size; ++i) {
    const msgpack::object_kv& kv = result.via.map.ptr[i];
    const bool key_is_str = kv.key.type == msgpack::type::STR;
    const std::string_view key = key_is_str ? Str(kv.key) : std::string_view();
    if (!config_placed && key_is_str && key >= std::string_view("config")) {
      // Keys are sorted (TrainingResult::Encode): the trial's config goes at its place.
      AddConfig();
      config_placed = true;
      if (key == "config") continue;
    }
    Field f{};
    f.quoted_key_begin = uint32_t(text_.size());
    if (key_is_str) {
      AppendJsonString(key, text_);
    } else {
      std::string quoted;
      AppendJson(kv.key, quoted);
      AppendJsonString(quoted, text_);
    }
    f.value_begin = uint32_t(text_.size());
    AppendJson(kv.val, text_);
    f.value_end = uint32_t(text_.size());
    fields_.push_back(f);
    if (!key_is_str) continue;  // no CSV column
    if (kv.val.type == msgpack::type::MAP) {
      AddNestedCells(std::string(key), kv.val);
      continue;
    }
    const uint32_t key_begin = uint32_t(key.data() - bytes_.data());
    AddLeaf(Src::kBytes, key_begin, uint32_t(key_begin + key.size()), kv.val, Src::kText,
            f.value_begin, f.value_end);
  }
  if (!config_placed) AddConfig();
  return true;
}

std::vector<std::string> ResultText::Keys() const {
  std::vector<std::string> keys;
  keys.reserve(cells_.size());
  for (const Cell& c : cells_) keys.emplace_back(View(c.key_src, c.key_begin, c.key_end));
  return keys;
}

std::optional<double> ResultText::Number(std::string_view key) const {
  for (const Cell& c : cells_) {
    if (c.is_number && View(c.key_src, c.key_begin, c.key_end) == key) return c.number;
  }
  return std::nullopt;
}

void ResultText::AppendJsonLine(std::string& out) const {
  out.push_back('{');
  for (size_t i = 0; i < fields_.size(); ++i) {
    const Field& f = fields_[i];
    if (i) out.push_back(',');
    out.append(text_, f.quoted_key_begin, f.value_begin - f.quoted_key_begin);
    out.push_back(':');
    out.append(text_, f.value_begin, f.value_end - f.value_begin);
  }
  out += "}\n";
}

void ResultText::AppendCsvRow(const std::vector<std::string>& columns, std::string& out) const {
  const size_t n = cells_.size();
  size_t next = 0;  // columns usually follow the cells' order: look there first
  for (size_t c = 0; c < columns.size(); ++c) {
    if (c) out.push_back(',');
    for (size_t tried = 0; tried < n; ++tried, next = (next + 1) % n) {
      const Cell& cell = cells_[next];
      if (View(cell.key_src, cell.key_begin, cell.key_end) != columns[c]) continue;
      AppendCsvField(View(cell.value_src, cell.value_begin, cell.value_end), out);
      next = (next + 1) % n;
      break;
    }
  }
  out.push_back('\n');
}

}  // namespace tunebus
