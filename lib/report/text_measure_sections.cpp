// The sections of the text report that say how much: losses, growth, snapshots, the statistics
// of the seed groups and what the runs cost (report/text_sections.h).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "report/text_format.h"
#include "report/text_sections.h"

namespace ra::report::text {
namespace {

// "max abs 0.00219, relative 0.0043, max 8192 ulp": with sign flips the ULP maximum is over the
// elements that kept their sign (across zero it would count every float between: about 2^31 for
// 1e-3 against -1e-3), and says so.
std::string snapshot_figures(const compare::TensorDifference& d) {
  std::string out = format("max abs %.3g, relative %.3g", d.max_abs, d.max_relative);
  if (d.max_ulp_same_sign == UINT64_MAX) return out + ", a NaN against another value";
  if (d.max_ulp_same_sign == 0) return out;  // every difference is a sign flip
  return out + format(", max %llu ulp%s", (unsigned long long)d.max_ulp_same_sign,
                      d.sign_flips > 0 ? " where the signs agree" : "");
}

// A final loss compares each run's last step: where the runs recorded different numbers of steps
// (a resumed run that lost some, a script that stopped early), those are other steps, and said so.
std::string final_steps_note(const ComparisonResult& r, int other) {
  if (r.identity.compared_runs.empty()) return "";
  const auto reference = static_cast<std::size_t>(r.identity.compared_runs.front());
  const auto index = static_cast<std::size_t>(other);
  if (reference >= r.runs.size() || index >= r.runs.size()) return "";
  const std::int64_t a = r.runs[reference].steps, b = r.runs[index].steps;
  if (a == b) return "";
  return format(" (after %lld steps in run %d, %lld in run %d: other steps)",
                static_cast<long long>(a), r.runs[reference].run, static_cast<long long>(b),
                r.runs[index].run);
}

}  // namespace

std::string loss_differences(const ComparisonResult& r) {
  std::string out;
  if (r.losses.first) {
    const auto& d = *r.losses.first;
    out += format("\nfirst differing loss: step %lld: %.9g vs %.9g (run %d), %llu ulp\n",
                  static_cast<long long>(d.step), d.reference, d.other, d.run,
                  static_cast<unsigned long long>(d.ulp));
  }
  if (r.losses.final) {
    const auto& d = *r.losses.final;
    out += format("final loss: %.9g vs %.9g (run %d), %llu ulp, %.3g relative", d.reference,
                  d.other, d.run, static_cast<unsigned long long>(d.ulp),
                  std::abs(static_cast<double>(d.other) - d.reference) /
                      std::max(1e-30, std::abs(static_cast<double>(d.reference))));
    out += final_steps_note(r, d.run) + "\n";
  }
  return out;
}

std::string growth_table(const ComparisonResult& r) {
  if (r.identity.identical || r.growth.epochs.empty()) return "";
  std::string out =
      "growth per epoch:   max|dloss|   max ulp   params differing   max|d eval acc|   snapshot "
      "max|dw|   relative   sign flips\n";
  for (const auto& g : r.growth.epochs) {
    out += format("  epoch %-10lld %10.3g %9llu", static_cast<long long>(g.epoch),
                  g.max_abs_loss_difference, static_cast<unsigned long long>(g.max_loss_ulp));
    // "-": the epoch's last step recorded one digest per category (a level of detail).
    out += g.weights_differing ? format(" %18d", *g.weights_differing) : format(" %18s", "-");
    out += g.max_abs_eval_accuracy_difference
               ? format(" %17.4f", *g.max_abs_eval_accuracy_difference)
               : format(" %17s", "-");
    out += g.snapshot
               ? format(" %18.3g %10.3g %12lld", g.snapshot->max_abs, g.snapshot->max_relative,
                        static_cast<long long>(g.snapshot->sign_flips))
               : format(" %18s %10s %12s", "-", "-", "-");
    out += "\n";
  }
  return out;
}

std::string snapshots(const ComparisonResult& r) {
  std::string out;
  for (const auto& s : r.snapshots) {
    if (s.total.differing == 0) continue;
    int tensors_differing = 0;
    for (const auto& t : s.tensors) tensors_differing += t.difference.differing > 0;
    const std::string flips =
        s.total.sign_flips > 0 ? format(" (%lld change sign)", (long long)s.total.sign_flips) : "";
    out += format("snapshot %s: %d of %zu tensors differ, %lld elements%s, ",
                  shown(s.point).c_str(), tensors_differing, s.tensors.size(),
                  static_cast<long long>(s.total.differing), flips.c_str()) +
           snapshot_figures(s.total) + "\n";
  }
  return out;
}

// The same-seed / different-seed std ratio in words: how big the fixed-seed noise is against the
// seed-to-seed spread, then whether the interval can be trusted (docs/report.md, "Seed groups").
// `different_std`: the different-seed group's std (0 with the ratio 0: neither group spreads).
std::string std_ratio_words(const char* what, const compare::RatioEstimate& e,
                            double different_std) {
  std::string out = std::string(what) + ": ";
  if (std::isinf(e.ratio)) {
    out += "the different-seed runs do not spread at all while the same-seed runs do";
  } else if (different_std == 0) {
    out +=
        "neither the same-seed nor the different-seed runs spread (do the seeds reach the "
        "random states?)";
  } else {
    out += format("the fixed-seed noise is about %.0f%% of the seed-to-seed spread", e.ratio * 100);
  }
  if (e.trustworthy) {
    return out + format(" (%.0f%% interval %.0f%%..%.0f%%)\n", e.confidence * 100, e.low * 100,
                        e.high * 100);
  }
  return out + "; too few runs to trust the interval (" + shown(e.warning) + ")\n";
}

std::string seed_groups(const ComparisonResult& r) {
  std::string out;
  for (const auto& g : r.seed_groups.groups) {
    // "same-seed runs", "different-seed runs", "perturbed runs" (--seeds all)
    const std::string name = g.group == "perturbed" ? "perturbed" : shown(g.group) + "-seed";
    out +=
        format("%s runs (%zu): final loss %.6g +- %.3g [%.6g, %.6g]", name.c_str(), g.final_loss.n,
               g.final_loss.mean, g.final_loss.std, g.final_loss.min, g.final_loss.max);
    if (g.eval_accuracy.n > 0) {
      out += format("; eval accuracy %.4f +- %.4f [%.4f, %.4f]", g.eval_accuracy.mean,
                    g.eval_accuracy.std, g.eval_accuracy.min, g.eval_accuracy.max);
    }
    out += "\n";
  }
  double loss_std = 0, accuracy_std = 0;  // the different-seed group's
  for (const auto& g : r.seed_groups.groups) {
    if (g.group == "different") loss_std = g.final_loss.std, accuracy_std = g.eval_accuracy.std;
  }
  if (r.seed_groups.loss_std_ratio)
    out += std_ratio_words("final loss", *r.seed_groups.loss_std_ratio, loss_std);
  if (r.seed_groups.accuracy_std_ratio) {
    out += std_ratio_words("eval accuracy", *r.seed_groups.accuracy_std_ratio, accuracy_std);
  }
  return out;
}

std::string timing(const ComparisonResult& r) {
  std::string out;
  for (const auto& g : r.seed_groups.groups) {
    const std::string name = g.group == "perturbed" ? "perturbed" : shown(g.group) + "-seed";
    out += format(
        "cost (%s runs): median step %.2f ms (mean of per-run medians; range %.2f..%.2f ms)\n",
        name.c_str(), g.median_step_ms.mean, g.median_step_ms.min, g.median_step_ms.max);
  }
  double recording = 0;
  bool measured = !r.runs.empty();
  for (const auto& run : r.runs) {
    recording = std::max(recording, run.recording_fraction);
    measured = measured && run.recording_measured;
  }
  // Measured: each run's median step against steps trained with recording off; else summed
  // (docs/report.md, "Cost"). Under 0 a measured figure is within the noise of the two medians.
  out += format("recording the trace cost at most %.2f%% of step time (%s)\n", recording * 100,
                measured ? "measured: each run's median step against steps trained with "
                           "recording off"
                         : "summed: the recorder's own time over the steps' time");
  // Over 100 % reads as an error unless it is said what the ratio is (docs/report.md, "Cost").
  if (!measured && recording > 1) {
    out +=
        "  (recorder time / training step time: digesting what every step recorded took longer "
        "than the step, as on a GPU, where steps are fast)\n";
  }
  return out;
}

}  // namespace ra::report::text
