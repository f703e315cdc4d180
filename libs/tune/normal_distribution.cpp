#include "libs/tune/normal_distribution.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

namespace tunebus {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kLogSqrt2Pi = 0.91893853320467274178;

// Acklam's rational approximation of the normal quantile (relative error < 1.2e-9).
double AcklamQuantile(double p) {
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                 -2.759285104469687e+02, 1.383577518672690e+02,
                                 -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                 -1.556989798598866e+02, 6.680131188771972e+01,
                                 -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                 -2.400758277161838e+00, -2.549732539343734e+00,
                                 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                                 2.445134137142996e+00, 3.754408661907416e+00};
  constexpr double kLow = 0.02425;
  auto tail = [&](double q) {
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  };
  if (p < kLow) return tail(std::sqrt(-2 * std::log(p)));
  if (p > 1 - kLow) return -tail(std::sqrt(-2 * std::log1p(-p)));
  const double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

}  // namespace

double NormalCdf(double z) { return 0.5 * std::erfc(-z * kSqrtHalf); }

double LogNormalCdf(double z) {
  if (z > 6) return std::log1p(-NormalCdf(-z));
  if (z >= -30) return std::log(NormalCdf(z));
  if (z == -kInf) return -kInf;
  // log Φ(z) = log φ(z) - log(-z) + log(1 - 1/z² + 3/z⁴ - 15/z⁶ + ...) (Abramowitz and Stegun
  // 26.2.12); at z <= -30 eight terms are exact to double precision.
  const double inv_z2 = 1 / (z * z);
  double series = 1, term = 1;
  for (int k = 1; k <= 8; ++k) {
    term *= -(2 * k - 1) * inv_z2;
    series += term;
  }
  return -0.5 * z * z - kLogSqrt2Pi - std::log(-z) + std::log(series);
}

double LogNormalMass(double a, double b) {
  if (!(a < b)) return -kInf;
  if (b <= 0) {
    const double lb = LogNormalCdf(b);
    return lb + std::log1p(-std::exp(LogNormalCdf(a) - lb));
  }
  if (a >= 0) return LogNormalMass(-b, -a);
  return std::log1p(-NormalCdf(a) - NormalCdf(-b));
}

double NormalQuantile(double p) {
  if (p <= 0) return -kInf;
  if (p >= 1) return kInf;
  const double x = AcklamQuantile(p);
  // One Halley step on Φ(x) - p (Acklam's refinement): about full double precision.
  const double e = NormalCdf(x) - p;
  const double u = e * std::sqrt(2 * std::numbers::pi) * std::exp(0.5 * x * x);
  return x - u / (1 + 0.5 * x * u);
}

double TruncatedNormalQuantile(double u, double a, double b) {
  const double below = NormalCdf(a);   // mass left of a
  const double above = NormalCdf(-b);  // mass right of b
  double mass;
  if (b <= 0) {
    mass = NormalCdf(b) - below;
  } else if (a >= 0) {
    mass = NormalCdf(-a) - above;
  } else {
    mass = 1 - below - above;
  }
  // Invert on the side where the tail probability is small, so it keeps its precision.
  const double p = below + u * mass;
  const double x = p <= 0.5 ? NormalQuantile(p) : -NormalQuantile(above + (1 - u) * mass);
  return std::clamp(x, a, b);
}

}  // namespace tunebus
