// The standard normal distribution as the Parzen estimators need it: the CDF, the log of the
// mass of an interval, the quantile, the quantile of a truncated normal (for sampling by
// inversion, as Optuna 3.1.0's samplers/_tpe/_truncnorm.py), and an exp for log-sum-exp.
//
// Accuracy: relative error about 1e-15 wherever the result is a normal double; LogNormalMass
// stays finite far into the tails (|z| up to ~1e150) through the asymptotic series of log Φ.
#pragma once

#include <bit>
#include <cstdint>

namespace tunebus {

/// Φ(z), the standard normal CDF; accurate in the left tail (erfc based).
double NormalCdf(double z);
/// log Φ(z), finite for every finite z (asymptotic series below z = -30).
double LogNormalCdf(double z);
/// log(Φ(b) - Φ(a)), the log mass of [a, b]; a and b may be ±infinity. -infinity when a >= b.
double LogNormalMass(double a, double b);
/// Φ⁻¹(p) for p in (0, 1) (Acklam's approximation refined by one Halley step); -inf at 0,
/// +inf at 1.
double NormalQuantile(double p);
/// The x in [a, b] whose mass in [a, x] is the fraction u of the mass of [a, b]: a standard
/// normal truncated to [a, b] at quantile u. REQUIRES: a < b, 0 <= u <= 1; a, b may be infinite.
double TruncatedNormalQuantile(double u, double a, double b);

/// e^x for -708 <= x <= 0 (x below -708 gives e^-708), within 2 ulp of std::exp: a
/// branch-free Cody-Waite reduction and a degree-12 Taylor polynomial (truncation error below
/// 2e-16 on |r| <= ln2 / 2), inline, several times faster than libm's exp: the Parzen
/// estimators' log-sum-exp over a thousand components is most of a suggestion's time.
inline double ExpNonPositive(double x) {
  constexpr double kLog2e = 1.4426950408889634;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;  // ln 2 split so k * kLn2Hi is exact
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  constexpr double kShift = 0x1.8p52;  // adding it rounds to an integer kept in the low bits
  x = x < -708.0 ? -708.0 : x;
  const double t = x * kLog2e + kShift;
  const double k = t - kShift;  // round(x / ln 2), in [-1021, 0]
  const double r = (x - k * kLn2Hi) - k * kLn2Lo;
  double p = 1.0 / 479001600;  // 1/12!
  p = p * r + 1.0 / 39916800;
  p = p * r + 1.0 / 3628800;
  p = p * r + 1.0 / 362880;
  p = p * r + 1.0 / 40320;
  p = p * r + 1.0 / 5040;
  p = p * r + 1.0 / 720;
  p = p * r + 1.0 / 120;
  p = p * r + 1.0 / 24;
  p = p * r + 1.0 / 6;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  // The low mantissa bits of t hold k + 2^51; shifting k + 1023 into the exponent field
  // gives 2^k.
  const uint64_t scale_bits = (std::bit_cast<uint64_t>(t) + 1023) << 52;
  return p * std::bit_cast<double>(scale_bits);
}

}  // namespace tunebus
