// Hyperparameter importance for the dashboard (docs/how-to/dashboard.md, "Hyperparameter
// importance"): a pure function of the trials' configs and metric values, no I/O, unit-tested
// (tests/unit/dashboard_analysis_test.cpp).
//
// The estimate is the first-order (main-effect) term of fANOVA (F. Hutter, H. Hoos,
// K. Leyton-Brown, "An Efficient Approach for Assessing Hyperparameter Importance", ICML 2014):
// the fraction of the metric's variance explained by one parameter's marginal, V_j / V. fANOVA
// (and Optuna's FanovaImportanceEvaluator) estimates the marginal from a random forest fitted to
// the trials; this estimate takes it from the trials themselves, binned: the variance of the
// per-bin means of the metric (one-way ANOVA's between-groups sum of squares) over its total
// variance, the correlation ratio eta^2 (K. Pearson 1905), with Kelley's (1935) small-sample
// correction epsilon^2 = (SS_between - (k - 1) MS_within) / SS_total clipped at 0, so a
// parameter that does not move the metric scores about 0 instead of (k - 1) / (n - 1).
// Numeric parameters are cut into k equal-count bins by rank (a log-scaled parameter bins as its
// log would); categorical ones (strings, booleans, a mixture) take one bin per value. The
// importances are then normalised to sum to 1, as Optuna's get_param_importances does.
// Interactions between parameters are not estimated (fANOVA's higher-order terms).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tunebus::dashboard {

/// One parameter's values over the trials. `numeric`: a number per trial (NaN where the trial
/// has none); else `labels`: a category per trial ("" where it has none).
struct ParamColumn {
  std::string name;
  bool categorical = false;
  std::vector<double> numeric;      // size n when !categorical
  std::vector<std::string> labels;  // size n when categorical
};

struct ParamImportance {
  std::string name;
  double variance_explained = 0;  // epsilon^2 of its bins, in [0, 1]
  double importance = 0;          // variance_explained normalised over the parameters (sum 1,
                                  // or all 0 when none explains anything)
  size_t bins = 0;                // groups the estimate used
  size_t trials = 0;              // trials with both the parameter and a finite metric
};

/// The importance of each parameter of `params` for `metric` (a value per trial, NaN where a
/// trial has none; every column has metric.size() entries), most important first (ties by
/// name). `max_bins` bounds the bins of a numeric parameter: k = min(max_bins, distinct values,
/// max(2, n / 4)). A parameter with fewer than 3 usable trials, one distinct value or a constant
/// metric scores 0. Cost: O(p n log n).
std::vector<ParamImportance> BinnedVarianceImportance(const std::vector<ParamColumn>& params,
                                                      const std::vector<double>& metric,
                                                      size_t max_bins = 10);

}  // namespace tunebus::dashboard
