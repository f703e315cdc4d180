// Tests for VariantGenerator: Ray Tune's BasicVariantGenerator semantics.
#include "libs/tune/variant_generator.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "libs/tune/variant_tag.hpp"

namespace tunebus {
namespace {

using json = nlohmann::json;

std::vector<Variant> Drain(VariantGenerator& gen, int64_t max = 100000) {
  std::vector<Variant> out;
  while (gen.HasNext() && int64_t(out.size()) < max) out.push_back(gen.Next());
  return out;
}

// Draws `n` values of a single sampler {"x": sampler}.
std::vector<json> DrawMany(const json& sampler, int n, uint64_t seed = 7) {
  json space = {{"x", sampler}};
  EXPECT_TRUE(VariantGenerator::Validate(space).ok())
      << VariantGenerator::Validate(space).message();
  VariantGenerator gen(space, n, seed);
  std::vector<json> out;
  while (gen.HasNext()) out.push_back(gen.Next().config["x"]);
  return out;
}

bool IsMultiple(double v, double q) { return std::abs(v / q - std::round(v / q)) < 1e-6; }

TEST(VariantGeneratorTest, GridRepeatsPerSampleWithFirstAxisFastest) {
  // Two grid axes (2 x 2) and num_samples 2 give 8 variants: samples outer, grid inner, the
  // first axis in param-space (sorted key) order varies fastest, as Ray.
  json space = {{"a", {{"grid_search", {1, 2}}}}, {"b", {{"grid_search", {"x", "y"}}}}, {"c", 5}};
  VariantGenerator gen(space, 2, 0);
  EXPECT_EQ(gen.Total(), 8);
  std::vector<Variant> all = Drain(gen);
  ASSERT_EQ(all.size(), 8u);
  const std::vector<std::string> tags = {"a=1,b=x", "a=2,b=x", "a=1,b=y", "a=2,b=y"};
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].tag, tags[i % 4]) << i;
    EXPECT_EQ(all[i].config["c"], 5);
  }
  EXPECT_EQ(all[2].config, json({{"a", 1}, {"b", "y"}, {"c", 5}}));
  EXPECT_FALSE(gen.HasNext());
  EXPECT_EQ(gen.produced(), 8);
}

TEST(VariantGeneratorTest, EachGridPointGetsFreshRandomDraws) {
  // Random samplers are redrawn for every variant, including between grid points.
  json space = {{"g", {{"grid_search", {1, 2, 3}}}}, {"r", {{"uniform", {0, 1}}}}};
  VariantGenerator gen(space, 2, 11);
  std::set<double> seen;
  for (const Variant& v : Drain(gen)) seen.insert(v.config["r"].get<double>());
  EXPECT_EQ(seen.size(), 6u);
}

TEST(VariantGeneratorTest, SameSeedGivesSameConfigsInSameOrder) {
  // Two generators with one seed produce identical sequences.
  json space = {{"lr", {{"loguniform", {1e-4, 1e-1}}}},
                {"k", {{"randint", {1, 100}}}},
                {"p", {{"choice", {"l1", "l2"}}}},
                {"g", {{"grid_search", {0, 1}}}}};
  VariantGenerator a(space, 10, 123), b(space, 10, 123);
  std::vector<Variant> va = Drain(a), vb = Drain(b);
  ASSERT_EQ(va.size(), 20u);
  for (size_t i = 0; i < va.size(); ++i) {
    EXPECT_EQ(va[i].config, vb[i].config);
    EXPECT_EQ(va[i].tag, vb[i].tag);
  }
}

TEST(VariantGeneratorTest, DifferentSeedsGiveDifferentConfigs) {
  // A different seed changes the random draws.
  json space = {{"x", {{"uniform", {0, 1}}}}};
  VariantGenerator a(space, 5, 1), b(space, 5, 2);
  std::vector<Variant> va = Drain(a), vb = Drain(b);
  int same = 0;
  for (size_t i = 0; i < va.size(); ++i) same += va[i].config == vb[i].config;
  EXPECT_EQ(same, 0);
}

TEST(VariantGeneratorTest, FloatSamplersStayWithinBounds) {
  // uniform, loguniform (base 10 and 2) and randn over 2000 draws: in range, floats, spread out.
  for (const json& x : DrawMany({{"uniform", {-2, 3}}}, 2000)) {
    ASSERT_TRUE(x.is_number_float());
    EXPECT_GE(x.get<double>(), -2);
    EXPECT_LE(x.get<double>(), 3);
  }
  int below_1e3 = 0;
  for (const json& x : DrawMany({{"loguniform", {1e-4, 1e-1}}}, 2000)) {
    EXPECT_GE(x.get<double>(), 1e-4);
    EXPECT_LE(x.get<double>(), 1e-1);
    below_1e3 += x.get<double>() < 1e-3;
  }
  EXPECT_NEAR(below_1e3, 667, 100);  // a third of the log range
  for (double base : {2.0, 0.5}) {   // a base below 1 is valid too
    for (const json& x : DrawMany({{"loguniform", {1, 1024, base}}}, 2000)) {
      EXPECT_GE(x.get<double>(), 1);
      EXPECT_LE(x.get<double>(), 1024);
    }
  }
  double sum = 0, sum_sq = 0;
  for (const json& x : DrawMany({{"randn", {10, 2}}}, 2000)) {
    sum += x.get<double>();
    sum_sq += x.get<double>() * x.get<double>();
  }
  double mean = sum / 2000, sd = std::sqrt(sum_sq / 2000 - mean * mean);
  EXPECT_NEAR(mean, 10, 0.2);
  EXPECT_NEAR(sd, 2, 0.2);
}

TEST(VariantGeneratorTest, QuantizedFloatSamplersRoundToMultiplesOfQ) {
  // quniform, qloguniform and qrandn return multiples of q; quniform covers every multiple.
  std::set<double> values;
  for (const json& x : DrawMany({{"quniform", {0, 1, 0.25}}}, 2000)) {
    double v = x.get<double>();
    EXPECT_GE(v, 0);
    EXPECT_LE(v, 1);
    EXPECT_TRUE(IsMultiple(v, 0.25)) << v;
    values.insert(v);
  }
  EXPECT_EQ(values, (std::set<double>{0, 0.25, 0.5, 0.75, 1}));
  for (const json& x : DrawMany({{"quniform", {0.05, 0.3, 0.1}}}, 2000)) {
    EXPECT_GE(x.get<double>(), 0.05);
    EXPECT_LE(x.get<double>(), 0.3);
    EXPECT_TRUE(IsMultiple(x.get<double>(), 0.1)) << x;
  }
  for (const json& x : DrawMany({{"qloguniform", {1e-4, 1, 5e-4}}}, 2000)) {
    EXPECT_GE(x.get<double>(), 1e-4);
    EXPECT_LE(x.get<double>(), 1);
    EXPECT_TRUE(IsMultiple(x.get<double>(), 5e-4)) << x;
  }
  for (const json& x : DrawMany({{"qrandn", {0, 3, 0.5}}}, 2000)) {
    EXPECT_TRUE(IsMultiple(x.get<double>(), 0.5)) << x;
  }
}

TEST(VariantGeneratorTest, IntegerSamplersReturnIntegersInRange) {
  // randint excludes high; qrandint includes high and hits every multiple; lograndint excludes
  // high; qlograndint includes high. All return JSON integers.
  std::set<int64_t> seen;
  for (const json& x : DrawMany({{"randint", {3, 7}}}, 2000)) {
    ASSERT_TRUE(x.is_number_integer()) << x;
    seen.insert(x.get<int64_t>());
  }
  EXPECT_EQ(seen, (std::set<int64_t>{3, 4, 5, 6}));
  seen.clear();
  for (const json& x : DrawMany({{"qrandint", {0, 10, 5}}}, 2000)) {
    ASSERT_TRUE(x.is_number_integer()) << x;
    seen.insert(x.get<int64_t>());
  }
  EXPECT_EQ(seen, (std::set<int64_t>{0, 5, 10}));
  seen.clear();
  for (const json& x : DrawMany({{"lograndint", {1, 10}}}, 2000)) {
    ASSERT_TRUE(x.is_number_integer()) << x;
    seen.insert(x.get<int64_t>());
  }
  EXPECT_EQ(*seen.begin(), 1);
  EXPECT_EQ(*seen.rbegin(), 9);
  for (const json& x : DrawMany({{"qlograndint", {2, 64, 2, 2}}}, 2000)) {
    ASSERT_TRUE(x.is_number_integer()) << x;
    EXPECT_GE(x.get<int64_t>(), 2);
    EXPECT_LE(x.get<int64_t>(), 64);
    EXPECT_EQ(x.get<int64_t>() % 2, 0);
  }
}

TEST(VariantGeneratorTest, ChoiceKeepsValueTypesAndCoversAllValues) {
  // choice values may be any JSON; every value shows up and keeps its type.
  json values = {"l2", 3, 0.5, json({{"depth", 4}}), true};
  std::set<std::string> seen;
  for (const json& x : DrawMany({{"choice", values}}, 2000)) {
    bool found = false;
    for (const json& v : values) found = found || v == x;
    EXPECT_TRUE(found) << x;
    seen.insert(x.dump());
  }
  EXPECT_EQ(seen.size(), values.size());
}

TEST(VariantGeneratorTest, NestedDictsUseDottedTagsAndKeepConstants) {
  // Samplers inside nested objects resolve in place; constants stay out of the tag.
  json space = {{"model",
                 {{"layers", {{"grid_search", {1, 2}}}},
                  {"act", "relu"},
                  {"opt", {{"lr", {{"grid_search", {0.0012345}}}}}}}},
                {"epochs", 3}};
  VariantGenerator gen(space, 1, 0);
  std::vector<Variant> all = Drain(gen);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].tag, "model.layers=1,model.opt.lr=0.001234");
  EXPECT_EQ(all[1].tag, "model.layers=2,model.opt.lr=0.001234");
  EXPECT_EQ(all[1].config,
            json({{"model", {{"layers", 2}, {"act", "relu"}, {"opt", {{"lr", 0.0012345}}}}},
                  {"epochs", 3}}));
}

TEST(VariantGeneratorTest, GridValuesMayBeObjectsAndStringsAreTaggedRaw) {
  // Objects are tagged as compact JSON, strings as written with '/' made '_'.
  json space = {{"cfg", {{"grid_search", {json({{"a", 1}})}}}},
                {"path", {{"grid_search", {"data/train"}}}}};
  VariantGenerator gen(space, 1, 0);
  Variant v = gen.Next();
  EXPECT_EQ(v.tag, "cfg={\"a\":1},path=data_train");
  EXPECT_EQ(v.config["cfg"], json({{"a", 1}}));
  EXPECT_EQ(v.config["path"], "data/train");
}

TEST(VariantGeneratorTest, EmptySpaceYieldsEmptyConfigsNumSamplesTimes) {
  // Without samplers every variant is the constants alone with an empty tag.
  VariantGenerator gen(json::object(), 3, 0);
  std::vector<Variant> all = Drain(gen);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].config, json::object());
  EXPECT_EQ(all[0].tag, "");
}

TEST(VariantGeneratorTest, UnboundedNumSamplesNeverRunsOut) {
  // num_samples -1: Total is -1 and HasNext stays true.
  VariantGenerator gen({{"x", {{"uniform", {0, 1}}}}}, -1, 5);
  EXPECT_EQ(gen.Total(), -1);
  for (int i = 0; i < 1000; ++i) (void)gen.Next();
  EXPECT_TRUE(gen.HasNext());
  EXPECT_EQ(gen.produced(), 1000);
}

TEST(VariantGeneratorTest, RestoredStateContinuesTheSameSequence) {
  // Save after 5 variants, restore into a new generator: the next 10 match the original's.
  json space = {{"lr", {{"loguniform", {1e-5, 1}}}},
                {"g", {{"grid_search", {"a", "b", "c"}}}},
                {"n", {{"randn", {0, 1}}}}};
  VariantGenerator original(space, 10, 99);
  for (int i = 0; i < 5; ++i) (void)original.Next();
  json state = original.SaveState();
  EXPECT_EQ(state["produced"], 5);
  VariantGenerator resumed(space, 10, 12345);  // the seed is overridden by the state
  ASSERT_TRUE(resumed.RestoreState(state).ok());
  EXPECT_EQ(resumed.produced(), 5);
  for (int i = 0; i < 10; ++i) {
    Variant a = original.Next(), b = resumed.Next();
    EXPECT_EQ(a.config, b.config) << i;
    EXPECT_EQ(a.tag, b.tag) << i;
  }
  EXPECT_EQ(original.HasNext(), resumed.HasNext());
}

TEST(VariantGeneratorTest, RestoreRejectsStateItDidNotProduce) {
  // Malformed states leave the generator untouched and return InvalidArgument.
  VariantGenerator gen({{"x", {{"uniform", {0, 1}}}}}, 4, 1);
  EXPECT_EQ(gen.RestoreState(json::array()).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(gen.RestoreState({{"produced", 1}, {"rng", "not a state"}}).ok());
  EXPECT_FALSE(gen.RestoreState({{"produced", 9}, {"rng", gen.SaveState()["rng"]}}).ok());
  EXPECT_FALSE(gen.RestoreState({{"produced", -1}, {"rng", gen.SaveState()["rng"]}}).ok());
  EXPECT_EQ(gen.produced(), 0);
  EXPECT_EQ(Drain(gen).size(), 4u);
}

TEST(VariantGeneratorTest, ValidateAcceptsEverySamplerFormAndEachResolves) {
  // One valid instance of every sampler, with and without the optional base: all validate and
  // every one is replaced by a drawn value (never left as the sampler object).
  json space = json::parse(R"({
      "a": {"choice": [1, "x"]}, "b": {"uniform": [0, 1]}, "c": {"quniform": [0, 1, 0.1]},
      "d": {"loguniform": [1e-3, 1]}, "e": {"loguniform": [1, 8, 2]},
      "f": {"qloguniform": [1e-3, 1, 1e-3]}, "g": {"qloguniform": [1, 8, 1, 2]},
      "h": {"randn": [0, 1]}, "i": {"qrandn": [0, 1, 0.1]}, "j": {"randint": [0, 10]},
      "k": {"qrandint": [0, 10, 2]}, "l": {"lograndint": [1, 100]},
      "m": {"lograndint": [1, 100, 2]}, "n": {"qlograndint": [1, 100, 5]},
      "o": {"qlograndint": [1, 100, 5, 2]}, "p": {"grid_search": [1]},
      "q": {"nested": {"r": {"uniform": [-1, 1]}}}, "s": [1, 2, 3]})");
  Status st = VariantGenerator::Validate(space);
  ASSERT_TRUE(st.ok()) << st.message();
  VariantGenerator gen(space, 50, 3);
  while (gen.HasNext()) {
    Variant v = gen.Next();
    for (const auto& [key, value] : v.config.items()) {
      if (key == "q") {
        EXPECT_TRUE(v.config["q"]["nested"]["r"].is_number_float());
      } else if (key != "s") {
        EXPECT_TRUE(value.is_primitive()) << key << "=" << value;
      }
    }
    EXPECT_EQ(v.config["s"], json({1, 2, 3}));
  }
}

struct BadSpace {
  const char* space;  // JSON text
  const char* message;
};

TEST(VariantGeneratorTest, ConditionalBranchesDrawOnlyThePickedBranch) {
  // A choice over maps holding samplers (Ray's tune.choice over dicts of domains): the config
  // holds the picked branch with its samplers drawn, the tag names the branch by its one
  // constant and its samplers under the choice's path, and ValidatePoint accepts what was drawn
  // and tells the branches apart by their keys and constants.
  const json space = json::parse(R"({
    "opt": {"choice": [{"name": "sgd", "lr": {"loguniform": [1e-4, 1]}},
                       {"name": "adam", "lr": {"loguniform": [1e-5, 1e-1]},
                        "beta1": {"uniform": [0.5, 0.999]}},
                       "none"]},
    "wd": {"uniform": [0, 1]}})");
  ASSERT_TRUE(VariantGenerator::Validate(space).ok());
  VariantGenerator gen(space, 300, 7);
  std::set<std::string> seen;
  while (gen.HasNext()) {
    const Variant v = gen.Next();
    const json& opt = v.config["opt"];
    ASSERT_TRUE(v.config["wd"].is_number_float());
    ASSERT_TRUE(VariantGenerator::ValidatePoint(space, v.config).ok()) << v.config.dump();
    if (opt == "none") {
      EXPECT_EQ(v.tag.rfind("opt=none,wd=", 0), 0u) << v.tag;
      seen.insert("none");
      continue;
    }
    const std::string name = opt.at("name");
    seen.insert(name);
    const double lr = opt.at("lr");
    if (name == "sgd") {
      EXPECT_EQ(opt.size(), 2u) << opt.dump();
      EXPECT_TRUE(lr >= 1e-4 && lr <= 1) << lr;
      EXPECT_EQ(v.tag.rfind("opt=sgd,opt.lr=", 0), 0u) << v.tag;
    } else {
      ASSERT_EQ(name, "adam");
      EXPECT_EQ(opt.size(), 3u) << opt.dump();
      EXPECT_TRUE(lr >= 1e-5 && lr <= 1e-1) << lr;
      EXPECT_EQ(v.tag.rfind("opt=adam,opt.beta1=", 0), 0u) << v.tag;  // param-space order
    }
  }
  EXPECT_EQ(seen, (std::set<std::string>{"adam", "none", "sgd"}));
  EXPECT_EQ(VariantGenerator::BranchOf(space["opt"]["choice"], json{{"name", "adam"}}), 1u);
  EXPECT_EQ(VariantGenerator::BranchOf(space["opt"]["choice"], "none"), 2u);
  EXPECT_FALSE(
      VariantGenerator::ValidatePoint(space, {{"opt", {{"name", "sgd"}, {"beta1", 0.9}}}}).ok());
  EXPECT_FALSE(
      VariantGenerator::ValidatePoint(space, {{"opt", {{"name", "adam"}, {"lr", 0.5}}}}).ok());
  // A branch whose constants are not one leaf is tagged by its index.
  EXPECT_EQ(BranchTag(json{{"a", 1}, {"b", 2}, {"x", {{"uniform", {0, 1}}}}}, 3), "3");
}

TEST(VariantGeneratorTest, ValidateNamesPathSamplerAndReason) {
  // Every malformed sampler gives "<dotted.path>.<sampler>: <why>".
  const std::vector<BadSpace> cases = {
      {R"({"lr": {"loguniform": [-1, 1]}})", "lr.loguniform: low must be > 0, got -1"},
      {R"({"x": {"uniform": [0, 1, 2]}})", "x.uniform: expects 2 arguments [low, high], got 3"},
      {R"({"x": {"loguniform": [1]}})",
       "x.loguniform: expects 2 or 3 arguments [low, high(, base)], got 1"},
      {R"({"x": {"uniform": "0..1"}})", "x.uniform: expected a list [low, high], got \"0..1\""},
      {R"({"x": {"uniform": [1, 1]}})", "x.uniform: low must be < high, got low=1, high=1"},
      {R"({"x": {"uniform": ["a", 1]}})", "x.uniform: low must be a number, got \"a\""},
      {R"({"x": {"randint": [1.5, 4]}})", "x.randint: low must be an integer, got 1.5"},
      {R"({"x": {"qrandint": [0, 10, 0]}})", "x.qrandint: q must be > 0, got 0"},
      {R"({"x": {"quniform": [0, 1, -0.5]}})", "x.quniform: q must be > 0, got -0.5"},
      {R"({"x": {"quniform": [0.1, 0.2, 0.3]}})",
       "x.quniform: no multiple of q=0.3 lies in [0.1, 0.2]"},
      {R"({"x": {"loguniform": [1, 10, 1]}})", "x.loguniform: base must be > 0 and != 1, got 1"},
      {R"({"x": {"lograndint": [0, 10]}})", "x.lograndint: low must be > 0, got 0"},
      {R"({"x": {"randn": [0, 0]}})", "x.randn: sd must be > 0, got 0"},
      {R"({"x": {"choice": []}})", "x.choice: needs at least one value, got an empty list"},
      {R"({"x": {"grid_search": []}})",
       "x.grid_search: needs at least one value, got an empty list"},
      {R"({"x": {"choice": [{"uniform": [0, 1]}]}})",
       "x.choice[0]: a sampler is a choice value only inside a map (a conditional branch, e.g. "
       "{type: adam, lr: {loguniform: [1e-5, 1e-1]}}); values are literals otherwise"},
      {R"({"x": {"choice": [1, {"lr": {"loguniform": [-1, 1]}}]}})",
       "x.choice[1].lr.loguniform: low must be > 0, got -1"},
      {R"({"x": {"choice": [{"lr": {"logunifrom": [1, 2]}}]}})",
       "x.choice[0].lr.logunifrom: not a sampling function; did you mean loguniform? (a constant "
       "map needs another key beside it)"},
      {R"({"x": {"choice": [{"a": {"grid_search": [1, 2]}}]}})",
       "x.choice[0]: grid_search and sample_from are not supported inside a choice"},
      {R"({"x": {"grid_search": [{"a": {"uniform": [0, 1]}}]}})",
       "x.grid_search: values are literals; a sampler inside them is not supported"},
      {R"({"a": {"b": {"qlograndint": [1, 10]}}})",
       "a.b.qlograndint: expects 3 or 4 arguments [low, high, q(, base)], got 2"},
      {R"({"l": [1, {"choice": [1]}]})", "l: a sampler inside a list is not supported"},
  };
  for (const BadSpace& c : cases) {
    Status st = VariantGenerator::Validate(json::parse(c.space));
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << c.space;
    EXPECT_EQ(st.message(), c.message) << c.space;
  }
  EXPECT_FALSE(VariantGenerator::Validate(json::array()).ok());
}

}  // namespace
}  // namespace tunebus
