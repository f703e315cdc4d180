// SearchRng: the random numbers of one suggestion of a model-based searcher (TPE, BOHB).
//
// A searcher draws the randomness of its suggestion number k from SearchRng(seed, k), so its
// state is only what it observed (DESIGN.md "Search": a resumed experiment suggests what it
// would have) and no generator state is journaled. Like VariantGenerator, every distribution
// is computed from raw std::mt19937_64 output (never <random> distributions), so a seed gives
// the same suggestions on every platform and standard library.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>

namespace tunebus {

class SearchRng {
 public:
  /// The generator of stream `stream` (a suggestion number) of `seed`: the engine is seeded
  /// with a SplitMix64 mix of both, so neighbouring streams are unrelated.
  SearchRng(uint64_t seed, uint64_t stream) : engine_(Mix(seed, stream)) {}

  /// 64 raw bits.
  uint64_t Next() { return engine_(); }
  /// Uniform in [0, 1), 53 bits.
  double Uniform01() { return double(engine_() >> 11) * 0x1.0p-53; }
  /// Uniform in [0, n). REQUIRES: n > 0.
  uint64_t Index(uint64_t n) {
    const uint64_t threshold = (0 - n) % n;  // rejects the biased low values
    uint64_t r;
    do {
      r = engine_();
    } while (r < threshold);
    return r % n;
  }
  /// A standard normal draw (Box-Muller, two uniforms per draw).
  double Normal() {
    const double u1 = 1.0 - Uniform01();  // (0, 1]
    const double u2 = Uniform01();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }

  /// SplitMix64's finaliser applied to seed and stream (Steele, Lea, Flood, OOPSLA 2014).
  static uint64_t Mix(uint64_t seed, uint64_t stream) {
    auto finalise = [](uint64_t z) {
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      return z ^ (z >> 31);
    };
    return finalise(seed + 0x9e3779b97f4a7c15ULL * (finalise(stream) + 1));
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace tunebus
