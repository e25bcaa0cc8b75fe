// Pearson's chi-square tests with their p-values, for the sampler's
// distribution tests.
#pragma once

#include <cmath>
#include <cstddef>
#include <map>
#include <vector>

namespace vllm::testing {

// Regularised upper incomplete gamma Q(a, x): by its power series below
// x = a + 1, by Lentz's continued fraction above (both converge fast there).
inline double upper_incomplete_gamma(double a, double x) {
  if (x <= 0.0) return 1.0;
  const double log_prefactor = a * std::log(x) - x - std::lgamma(a);
  if (x < a + 1.0) {
    double term = 1.0 / a, sum = term;
    for (int n = 1; n < 1000 && std::fabs(term) > std::fabs(sum) * 1e-15; ++n) {
      term *= x / (a + n);
      sum += term;
    }
    return 1.0 - sum * std::exp(log_prefactor);
  }
  constexpr double kTiny = 1e-300;
  double b = x + 1.0 - a, c = 1.0 / kTiny, d = 1.0 / b, h = d;
  for (int i = 1; i < 1000; ++i) {
    const double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    d = std::fabs(d) < kTiny ? kTiny : d;
    c = b + an / c;
    c = std::fabs(c) < kTiny ? kTiny : c;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1.0) < 1e-15) break;
  }
  return std::exp(log_prefactor) * h;
}

struct ChiSquare {
  double statistic = 0.0;
  int degrees_of_freedom = 0;
  double p_value = 1.0;
};

// Observed counts against expected probabilities; categories with
// probability 0 must have no counts (they add an infinite statistic).
inline ChiSquare chi_square(const std::vector<int>& counts, const std::vector<double>& probs) {
  ChiSquare r;
  int total = 0;
  for (int c : counts) total += c;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (probs[i] == 0.0) {
      if (counts[i] != 0) r.statistic = INFINITY;
      continue;
    }
    const double expected = total * probs[i];
    r.statistic += (counts[i] - expected) * (counts[i] - expected) / expected;
    ++r.degrees_of_freedom;
  }
  --r.degrees_of_freedom;
  r.p_value = std::isinf(r.statistic) ? 0.0 : upper_incomplete_gamma(r.degrees_of_freedom / 2.0, r.statistic / 2.0);
  return r;
}

// Whether two samples of equal size come from one distribution (Pearson's
// test of homogeneity): categories are the union of those seen in either.
template <typename Category>
ChiSquare chi_square_homogeneity(const std::map<Category, int>& a, const std::map<Category, int>& b) {
  std::map<Category, std::pair<int, int>> both;
  for (const auto& [c, n] : a) both[c].first = n;
  for (const auto& [c, n] : b) both[c].second = n;
  ChiSquare r;
  for (const auto& [c, n] : both) {
    // Each sample's expected count is half the category's total.
    const double diff = n.first - n.second;
    r.statistic += diff * diff / (n.first + n.second);
    ++r.degrees_of_freedom;
  }
  --r.degrees_of_freedom;
  r.p_value = upper_incomplete_gamma(r.degrees_of_freedom / 2.0, r.statistic / 2.0);
  return r;
}

}  // namespace vllm::testing
