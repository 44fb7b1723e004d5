#include "report/text_report.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>

#include "core/printable.h"

namespace ra::report {
namespace {

using audit::Category;

// Every string of the result that came from a spec or a trace (names, tensors, groups, points,
// environment values) goes through `shown` before it reaches the text: a name holding a newline
// or an ANSI escape must not forge or hide a line of the report (core/printable.h).
std::string shown(const std::string& text) {
  return printable(text);
}

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buffer[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buffer, sizeof buffer, fmt, args);
  va_end(args);
  return buffer;
}

std::string run_list(const std::vector<int>& runs) {
  std::string s;
  for (std::size_t i = 0; i < runs.size(); ++i) s += (i ? "," : "") + std::to_string(runs[i]);
  return s;
}

std::string category_title(Category c) {
  switch (c) {
    case Category::initial_weights:
      return "initial weights";
    case Category::batches:
      return "batches";
    case Category::losses:
      return "losses";
    case Category::gradients:
      return "gradients";
    case Category::weights:
      return "weights";
    case Category::optimizer_state:
      return "optimizer state";
  }
  return "?";
}

std::string where(const audit::Divergence& d) {
  if (!d.step) return "before step 0";
  return format("step %lld (epoch %lld, batch %lld)", static_cast<long long>(*d.step),
                static_cast<long long>(d.epoch + 1), static_cast<long long>(d.batch));
}

std::string verdict(const audit::ComparisonResult& r) {
  const std::size_t n = r.compared_runs.size();
  std::size_t classes_among_compared = 0;
  for (const auto& c : r.classes) {
    for (int run : c) {
      if (std::find(r.compared_runs.begin(), r.compared_runs.end(), run) != r.compared_runs.end()) {
        ++classes_among_compared;
        break;
      }
    }
  }
  std::string head;
  if (n < 2) {
    head = "NO SAME-SEED PAIR to compare (" + std::to_string(r.runs.size()) + " runs)";
  } else if (r.identical) {
    head = format("BITWISE IDENTICAL: all %zu same-seed runs", n);
  } else {
    head = format("%s: %zu distinct outcomes among %zu same-seed runs",
                  r.diverged() ? "DIVERGED" : "NOT BITWISE IDENTICAL (allowed)",
                  classes_among_compared, n);
    if (r.within_tolerance) {
      head += format("; final losses within %.0e relative", r.loss_tolerance);
    } else {
      head += format("; final losses NOT within %.0e relative", r.loss_tolerance);
    }
  }
  std::string classes = "outcome classes:";
  for (const auto& c : r.classes) classes += " {" + run_list(c) + "}";
  return head + "\n" + classes + "\n";
}

// Where the runs came from, when from audit folders: what is missing or foreign, never hidden.
std::string audit_folder_lines(const audit::ComparisonResult& r) {
  std::string out;
  for (const auto& f : r.audit_folders) {
    if (f.audit_id.empty()) {
      out += shown(f.folder) + ": no manifest\n";
    } else if (!f.missing_runs.empty()) {
      out += format("INCOMPLETE AUDIT %s in %s: %zu of %d planned runs have a whole trace",
                    f.audit_id.c_str(), shown(f.folder).c_str(), f.runs.size(), f.planned_runs);
      bool renumbered = false;
      for (std::size_t i = 0; i < f.runs.size(); ++i)
        renumbered |= f.runs[i] != static_cast<int>(i);
      if (renumbered) out += " (the report's runs are its runs " + run_list(f.runs) + ")";
      out += "\n";
    } else if (!f.foreign_files.empty() || !f.notes.empty()) {
      out += "audit " + f.audit_id + " in " + shown(f.folder) + ":\n";
    }
    for (const auto& m : f.missing_runs) {
      out += format("  missing run %d: %s\n", m.run, shown(m.reason).c_str());
    }
    for (const auto& x : f.foreign_files) {
      out += "  not of this audit, not compared: " + shown(x.file) + " (" + shown(x.reason) + ")\n";
    }
    for (const auto& n : f.notes) out += "  note: " + shown(n) + "\n";
  }
  for (const auto& s : r.ignored_snapshots) out += "ignored snapshot " + shown(s) + "\n";
  return out;
}

}  // namespace

std::string render_text(const audit::ComparisonResult& r) {
  std::string out = "repro-audit: " + shown(r.spec_name) + ", " + std::to_string(r.runs.size()) +
                    " runs, mode " + shown(r.mode_summary) + "\n";
  out += verdict(r);
  for (const std::string& w : r.warnings) {
    out += "WARNING: ";
    out += shown(w);  // names trace files
    out += "\n";
  }
  if (r.first_divergence) {
    const auto& d = *r.first_divergence;
    out += "first divergence: " + where(d) + ", " + category_title(d.category) + " of " +
           shown(d.tensor) + " (runs " + run_list(d.runs_differing) + " differ from run " +
           std::to_string(r.compared_runs.empty() ? 0 : r.compared_runs[0]) + ")\n";
  }
  out += audit_folder_lines(r);
  for (const std::string& e : r.environment_differences) {
    out += "environment differs: " + shown(e) + "\n";
  }
  for (const std::string& l : r.ledger_differences) {
    out += "algorithm ledger differs: " + shown(l) + "\n";
  }

  if (r.compared_runs.size() >= 2) {
    out += "\n";
    for (const auto& v : r.categories) {
      out += format("  %-16s ", category_title(v.category).c_str());
      if (v.identical) {
        out += "identical\n";
      } else if (!v.first->step) {
        out += "differ at " + shown(v.first->tensor) + " (runs " +
               run_list(v.first->runs_differing) + ")\n";
      } else {
        out += format("differ from step %lld at %s (%lld steps differ)\n",
                      static_cast<long long>(*v.first->step), shown(v.first->tensor).c_str(),
                      static_cast<long long>(v.steps_differing));
      }
    }
  }
  if (r.first_loss_difference) {
    const auto& d = *r.first_loss_difference;
    out += format("\nfirst differing loss: step %lld: %.9g vs %.9g (run %d), %llu ulp\n",
                  static_cast<long long>(d.step), d.reference, d.other, d.run,
                  static_cast<unsigned long long>(d.ulp));
  }
  if (r.final_loss_difference) {
    const auto& d = *r.final_loss_difference;
    out += format("final loss: %.9g vs %.9g (run %d), %llu ulp, %.3g relative\n", d.reference,
                  d.other, d.run, static_cast<unsigned long long>(d.ulp),
                  std::abs(static_cast<double>(d.other) - d.reference) /
                      std::max(1e-30, std::abs(static_cast<double>(d.reference))));
  }
  if (!r.identical && !r.growth.empty()) {
    out +=
        "growth per epoch:   max|dloss|   max ulp   params differing   max|d eval acc|   snapshot "
        "max|dw|\n";
    for (const auto& g : r.growth) {
      out += format("  epoch %-10lld %10.3g %9llu %18d", static_cast<long long>(g.epoch + 1),
                    g.max_abs_loss_difference, static_cast<unsigned long long>(g.max_loss_ulp),
                    g.weights_differing);
      out += g.max_abs_eval_accuracy_difference
                 ? format(" %17.4f", *g.max_abs_eval_accuracy_difference)
                 : format(" %17s", "-");
      out += g.snapshot ? format(" %18.3g", g.snapshot->max_abs) : format(" %18s", "-");
      out += "\n";
    }
  }
  for (const auto& s : r.snapshots) {
    if (s.total.differing == 0) continue;
    int tensors_differing = 0;
    for (const auto& t : s.tensors) tensors_differing += t.difference.differing > 0;
    out +=
        format("snapshot %s: %d of %zu tensors differ, %lld elements, max abs %.3g, max %llu ulp\n",
               shown(s.point).c_str(), tensors_differing, s.tensors.size(),
               static_cast<long long>(s.total.differing), s.total.max_abs,
               static_cast<unsigned long long>(s.total.max_ulp));
  }

  out += "\n";
  for (const auto& g : r.statistics) {
    out += format("%s-seed runs (%zu): final loss %.6g +- %.3g [%.6g, %.6g]",
                  shown(g.group).c_str(), g.final_loss.n, g.final_loss.mean, g.final_loss.std,
                  g.final_loss.min, g.final_loss.max);
    if (g.eval_accuracy.n > 0) {
      out += format("; eval accuracy %.4f +- %.4f [%.4f, %.4f]", g.eval_accuracy.mean,
                    g.eval_accuracy.std, g.eval_accuracy.min, g.eval_accuracy.max);
    }
    out += "\n";
  }
  for (const auto* ratio : {&r.loss_std_ratio, &r.accuracy_std_ratio}) {
    if (!*ratio) continue;
    const auto& e = **ratio;
    out += format(
        "same-seed std / different-seed std of %s: %.0f%% (%.0f%% interval %.0f%%..%.0f%%)%s\n",
        ratio == &r.loss_std_ratio ? "final loss" : "eval accuracy", e.ratio * 100,
        e.confidence * 100, e.low * 100, e.high * 100,
        e.trustworthy ? "" : (" WARNING: " + shown(e.warning)).c_str());
  }
  for (const auto& g : r.statistics) {
    out += format(
        "cost (%s-seed runs): median step %.2f ms (mean of per-run medians; range %.2f..%.2f ms)\n",
        shown(g.group).c_str(), g.median_step_ms.mean, g.median_step_ms.min, g.median_step_ms.max);
  }
  double recording = 0;
  for (const auto& run : r.runs) recording = std::max(recording, run.recording_fraction);
  out += format("recording the trace cost at most %.2f%% of step time\n", recording * 100);
  return out;
}

}  // namespace ra::report
