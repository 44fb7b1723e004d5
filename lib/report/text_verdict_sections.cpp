// The first sections of the text report: what a reader needs before anything else
// (report/text_sections.h).
#include <algorithm>
#include <map>

#include "compare/verdict.h"
#include "report/text_format.h"
#include "report/text_sections.h"
#include "trace/op_window.h"

namespace ra::report::text {

std::string header(const ComparisonResult& r) {
  return "repro-audit: " + shown(r.subject.spec_name) + ", " + runs_count(r.runs.size()) + ", " +
         mode_words(r) + "\n";
}

namespace {

// Some finding (compare/checks.h) without a section of its own has `outcome`; the resumes and the
// data-parallel parts, which have one (report/sections.h), are named in words of their own below.
bool any_finding(const ComparisonResult& r, compare::CheckOutcome outcome) {
  return std::any_of(r.findings.begin(), r.findings.end(), [&](const compare::Finding& f) {
    return !f.own_section && f.outcome == outcome;
  });
}

// Some part of finding `id` whose name starts with one of `names` failed.
bool part_failed(const ComparisonResult& r, const std::string& id,
                 std::initializer_list<const char*> names) {
  const compare::Finding* f = compare::finding_of(r.findings, id);
  if (f == nullptr) return false;
  return std::any_of(f->parts.begin(), f->parts.end(), [&](const compare::FindingPart& p) {
    return p.outcome == compare::CheckOutcome::failed &&
           std::any_of(names.begin(), names.end(),
                       [&](const char* name) { return p.name.starts_with(name); });
  });
}

// The first finding of `outcome`, named for the verdict line.
std::string finding_named(const ComparisonResult& r, compare::CheckOutcome outcome) {
  for (const compare::Finding& f : r.findings) {
    if (!f.own_section && f.outcome == outcome) return f.name;
  }
  return "a check";
}

// The head of the verdict when the compared runs agree (rank 0's, per world size) and the audit
// still failed: which check failed, and where the report shows it.
std::string failed_beside_identity(const ComparisonResult& r, std::size_t n) {
  if (any_finding(r, compare::CheckOutcome::failed)) {
    return format("DIVERGED: the %zu same-seed runs agree, but %s failed (below)", n,
                  finding_named(r, compare::CheckOutcome::failed).c_str());
  }
  if (part_failed(r, "data_parallel", {"rank ", "replicas", "collective"})) {
    return format(
        "DIVERGED: rank 0 is bitwise identical in all %zu same-seed runs, but not every "
        "rank or replica agrees (data-parallel, below)",
        n);
  }
  return format(
      "DIVERGED: the %zu same-seed runs' recorded steps agree, but a resumed run is NOT the "
      "uninterrupted run (resume, below)",
      n);
}

// The same-seed runs are identical: the verdict, unless another check failed or was not proven.
std::string identical_head(const ComparisonResult& r, const compare::AuditVerdict& v,
                           std::size_t n) {
  if (v.status == compare::AuditStatus::diverged) return failed_beside_identity(r, n);
  if (v.status == compare::AuditStatus::inconclusive) {
    return format(
        "INCONCLUSIVE: all %zu same-seed runs are bitwise identical, but %s did not prove the "
        "audit could see a difference (below; exit 6)",
        n, finding_named(r, compare::CheckOutcome::inconclusive).c_str());
  }
  return format("BITWISE IDENTICAL: all %zu same-seed runs", n);
}

// Where the runs may differ (identity allowed) and the audit still failed, or was not proven: the
// check that decided it, before the runs' difference (exit 1 or 6, as the verdict's).
std::string allowed_difference_head(const ComparisonResult& r, const compare::AuditVerdict& v,
                                    compare::CheckOutcome identity) {
  if (identity == compare::CheckOutcome::failed) return "";
  if (v.status == compare::AuditStatus::diverged) {
    const std::string what = any_finding(r, compare::CheckOutcome::failed)
                                 ? finding_named(r, compare::CheckOutcome::failed)
                                 : std::string("a rank, replica or resume check");
    return "DIVERGED: " + what + " failed (below); ";
  }
  if (v.status == compare::AuditStatus::inconclusive) {
    return "INCONCLUSIVE: " + finding_named(r, compare::CheckOutcome::inconclusive) +
           " was not proven (below; exit 6); ";
  }
  return "";
}

}  // namespace

std::string verdict(const ComparisonResult& r) {
  const compare::AuditVerdict v = compare::audit_verdict(r);
  const std::size_t n = r.identity.compared_runs.size();
  std::size_t classes_among_compared = 0;
  for (const auto& c : r.identity.classes) {
    for (int run : c) {
      if (std::find(r.identity.compared_runs.begin(), r.identity.compared_runs.end(), run) !=
          r.identity.compared_runs.end()) {
        ++classes_among_compared;
        break;
      }
    }
  }
  std::string head;
  // The exit code is the verdict's (an incomplete audit's 4 ranks above nothing compared's 5).
  const std::string nothing =
      r.identity.allow_empty ? "nothing was compared (allowed: --allow-empty)"
      : v.status == compare::AuditStatus::nothing_compared
          ? "nothing was compared, no verdict (exit 5; --allow-empty accepts it)"
          : "nothing was compared, no verdict";
  const compare::CheckOutcome identity = v.outcome(compare::CheckKind::identity);
  if (r.identity.spread_only) {
    head = "DIFFERENT SEEDS ONLY (" + runs_count(r.runs.size()) +
           "): no same-seed pair, so no identity to check; the spread of their outcomes "
           "is below";
  } else if (n < 2) {
    head = "NO SAME-SEED PAIR to compare (" + runs_count(r.runs.size()) + "): " + nothing;
  } else if (r.identity.no_steps) {
    head =
        format("NO STEP RECORDED by the %zu same-seed runs (does the script call rec.step?): ", n) +
        nothing;
  } else if (part_failed(r, "data_parallel", {"world sizes"})) {
    head = format(
        "DIVERGED: the %zu same-seed runs of one command came up with different world sizes "
        "(data-parallel, below)",
        n);
  } else if (identity == compare::CheckOutcome::passed && !r.identity.identical) {
    head = format(
        "DIFFERENT WORLD SIZES: the %zu same-seed runs differ only between world sizes, a "
        "configuration (data-parallel, below); no two runs of one world size differ",
        n);
  } else if (identity == compare::CheckOutcome::passed) {
    head = identical_head(r, v, n);
  } else {
    head = format(
        "%s: %zu distinct outcomes among %zu same-seed runs",
        identity == compare::CheckOutcome::failed ? "DIVERGED" : "NOT BITWISE IDENTICAL (allowed)",
        classes_among_compared, n);
    head = allowed_difference_head(r, v, identity) + head;
    if (r.losses.within_tolerance) {
      head += format("; final losses within %.0e relative", r.losses.tolerance);
    } else {
      head += format("; final losses NOT within %.0e relative", r.losses.tolerance);
    }
  }
  if (r.incomplete()) {
    std::size_t whole = 0;
    int planned = 0;
    for (const auto& f : r.sources.audit_folders) {
      whole += f.runs.size();
      planned += f.planned_runs;
    }
    head =
        format("INCOMPLETE AUDIT (%zu of %d planned runs; the verdict is over these only): ", whole,
               planned) +
        head;
  }
  // At most this many classes are named (a 1000-run audit may have 1000): the rest are counted.
  constexpr std::size_t kClassesShown = 24;
  std::string classes = "outcome classes:";
  for (std::size_t i = 0; i < r.identity.classes.size() && i < kClassesShown; ++i) {
    classes += " {" + run_list(r.identity.classes[i]) + "}";
  }
  if (r.identity.classes.size() > kClassesShown) {
    classes += format(" ... (%zu more)", r.identity.classes.size() - kClassesShown);
  }
  return head + "\n" + classes + "\n";
}

namespace {

// What users get wrong, said plainly when the first divergence shows it: same-seed runs that do
// not start alike were not seeded alike; batches that differ come from the data, not a kernel.
std::string plain_words(const compare::Divergence& d) {
  using compare::Category;
  if (d.category == Category::initial_weights) {
    return "  the same-seed runs start from different weights: they are not seeded alike (seed "
           "what initialises the weights before the model is built: torch.manual_seed, "
           "repro_audit.seed_everything)\n";
  }
  if (d.category == Category::batches) {
    return format(
        "  the batches differ from step %lld on: the data order or the data read "
        "differs, not a kernel (seed the loader's shuffling, e.g. the DataLoader's "
        "generator, and the augmentation's random generators)\n",
        static_cast<long long>(d.step.value_or(0)));
  }
  if (d.per_category) {
    return "  the traces record a digest per tensor only at some steps (--tensor-digests " +
           shown(d.tensor_digests) +
           "), not this one: the next step records it per tensor, to name the tensor\n";
  }
  return "";
}

}  // namespace

std::string first_divergence(const ComparisonResult& r) {
  if (!r.first_divergence) return "";
  const auto& d = *r.first_divergence;
  const int reference = r.identity.compared_runs.empty() ? 0 : r.identity.compared_runs[0];
  std::string out =
      d.category == compare::Category::steps
          ? "first divergence: the runs recorded different numbers of steps: " + shown(d.detail) +
                "\n"
          : "first divergence: " + where(d) + ", " + category_title(d.category) +
                (d.per_category ? std::string(" (one digest for all of them at this step)")
                                : " of " + shown(d.tensor)) +
                " (runs " + run_list(d.runs_differing) + " differ from run " +
                std::to_string(reference) + ")\n" +
                // Runs of other world sizes part by design: the data-parallel section says why.
                (r.world_sizes || compare::divergence_follows_resume(r) ? std::string()
                                                                        : plain_words(d));
  // Runs made on other machines (shards on other nodes): the likely explanation, said here.
  constexpr std::size_t kShown = 8;
  for (std::size_t i = 0; i < r.divergent_machines.size() && i < kShown; ++i) {
    const MachineDifference& m = r.divergent_machines[i];
    std::string keys;
    for (const std::string& k : m.environment) keys += (keys.empty() ? "" : ", ") + shown(k);
    out += format("  run %d ran on another machine or build than run %d: ", m.run, reference) +
           keys + " differ" + (m.ledger ? "; its algorithm ledger differs too" : "") + "\n";
  }
  if (r.divergent_machines.size() > kShown) {
    out += format("  and %zu more runs on other machines or builds (JSON: divergent_machines)\n",
                  r.divergent_machines.size() - kShown);
  }
  return out;
}

std::string next_step(const ComparisonResult& r) {
  const std::vector<std::string> advice = compare::next_step_advice(r);
  if (r.next_step.loader_advice) {
    std::string out = "next step: " + shown(advice.front()) + "\n";
    for (std::size_t i = 1; i < advice.size(); ++i) out += "  " + shown(advice[i]) + "\n";
    return out;
  }
  if (!r.next_step.trace_ops) return "";
  const std::string window = trace::to_string(*r.next_step.trace_ops);
  const std::string why = advice.front();
  if (!r.next_step.command.empty()) {
    return "next step: " + shown(r.next_step.command) + "\n  (" + why + ")\n";
  }
  return "next step: run the audit again with --trace-ops " + window +
         (r.next_step.tensor_digests ? " --tensor-digests " + window : std::string()) +
         " (its spec and options, another --out): " + why + "\n";
}

namespace {

// The shards of a sharded audit folder: which are unfinished (running or not), where they ran.
std::string shard_lines(const AuditFolderCheck& f) {
  std::string out;
  std::map<std::string, std::vector<int>> by_host;
  for (const ShardState& s : f.shard_states) {
    for (const std::string& h : s.hosts) by_host[h].push_back(s.index);
    if (s.finished()) continue;
    out += format("  shard %d/%d unfinished: run(s) %s missing; ", s.index, f.shards,
                  run_list(s.missing).c_str());
    out += s.running.empty() ? "not running (failed, cancelled or not started)\n"
                             : "still running (" + shown(s.running) + ")\n";
  }
  std::string hosts;
  for (const auto& [host, shards] : by_host) {
    hosts += (hosts.empty() ? "" : "; ") + shown(host) + ": shard(s) " + run_list(shards);
  }
  return format("  %d shards; ran on %zu host(s)%s%s\n", f.shards, by_host.size(),
                hosts.empty() ? "" : ": ", hosts.c_str()) +
         out;
}

}  // namespace

// Where the runs came from, when from audit folders: what is missing or foreign, never hidden.
std::string audit_folders(const ComparisonResult& r) {
  std::string out;
  for (const auto& f : r.sources.audit_folders) {
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
    } else if (!f.foreign_files.empty() || !f.notes.empty() || f.shards > 0) {
      out += "audit " + f.audit_id + " in " + shown(f.folder) + ":\n";
    }
    if (f.shards > 0) out += shard_lines(f);
    for (const auto& m : f.missing_runs) {
      out += format("  missing run %d", m.run);
      if (m.shard >= 0) out += format(" (shard %d/%d)", m.shard, f.shards);
      out += ": " + shown(m.reason) + "\n";
    }
    for (const auto& x : f.foreign_files) {
      out += "  not of this audit, not compared: " + shown(x.file) + " (" + shown(x.reason) + ")\n";
    }
    for (const auto& n : f.notes) out += "  note: " + shown(n) + "\n";
  }
  for (const auto& s : r.sources.ignored_snapshots) out += "ignored snapshot " + shown(s) + "\n";
  return out;
}

// After a blank line; only when there are runs to compare.
std::string category_table(const ComparisonResult& r) {
  if (r.identity.compared_runs.size() < 2) return "";
  std::string out = "\n";
  for (const auto& v : r.categories) {
    out += format("  %-16s ", category_title(v.category).c_str());
    if (v.identical) {
      out += "identical\n";
    } else if (!v.first->step) {
      out += "differ at " + divergence_tensor(*v.first) + " (runs " +
             run_list(v.first->runs_differing) + ")\n";
    } else {
      out += format("differ from step %lld at %s (%lld steps differ)\n",
                    static_cast<long long>(*v.first->step), divergence_tensor(*v.first).c_str(),
                    static_cast<long long>(v.steps_differing));
    }
  }
  return out;
}

}  // namespace ra::report::text
