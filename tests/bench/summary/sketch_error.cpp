// The sketch's measured quantile error against exact values, for the benchmark table: one
// million durations per shape, the worst relative error over the quantiles stats reports and
// a few more. Not a timing: a table of measured errors (tests/unit/gantt_analysis/sketch_test.cpp
// holds the bound as a test).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "gantt/analysis/sketch.h"

namespace ga = gantt::analysis;

int main() {
  std::mt19937_64 rng(2026);
  std::lognormal_distribution<double> lognormal(9.0, 1.5);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  double worst_all = 0;
  for (const std::string shape : {"lognormal", "pareto", "bimodal", "uniform"}) {
    std::vector<int64_t> v(1'000'000);
    for (size_t i = 0; i < v.size(); ++i) {
      if (shape == "lognormal") v[i] = 1 + static_cast<int64_t>(lognormal(rng));
      else if (shape == "pareto") v[i] = static_cast<int64_t>(1000.0 / std::pow(1.0 - u01(rng), 1.0 / 1.2));
      else if (shape == "bimodal") v[i] = i % 3 ? 2'000 + static_cast<int64_t>(u01(rng) * 100) : 900'000;
      else v[i] = 1 + static_cast<int64_t>(u01(rng) * 5e6);
    }
    ga::DurationDigest d;
    for (int64_t x : v) d.add(x);
    std::sort(v.begin(), v.end());
    const auto exact_rank = [&](uint64_t k) { return static_cast<double>(v[k - 1]); };
    const uint64_t n = v.size();
    const uint64_t p95 = static_cast<uint64_t>(std::ceil(0.95 * static_cast<double>(n)));
    const double exact_median = (exact_rank(n / 2) + exact_rank(n / 2 + 1)) / 2;
    const double e_med = std::fabs(d.median_ns() - exact_median) / exact_median;
    const double e_p95 = std::fabs(static_cast<double>(d.p95_ns()) - exact_rank(p95)) / exact_rank(p95);
    double worst = std::max(e_med, e_p95);
    for (double q : {0.01, 0.1, 0.25, 0.75, 0.9, 0.99, 0.999}) {
      const uint64_t k = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(n))));
      worst = std::max(worst, std::fabs(d.sketch().value_at_rank(k) - exact_rank(k)) / exact_rank(k));
    }
    worst_all = std::max(worst_all, worst);
    std::printf("%s median_err %.5f p95_err %.5f worst_err %.5f buckets %zu\n", shape.c_str(), e_med, e_p95, worst,
                d.sketch().positive().size());
  }
  std::printf("worst %.5f\n", worst_all);
}
