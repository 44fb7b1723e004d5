// The data-parallel section (report/sections.h): the data-parallel finding
// (compare/data_parallel_finding.cpp) in every form (docs/distributed.md). In words: the world
// sizes the runs came up with, each rank's verdict across runs, the replicas, the collective; the
// HTML page a table of the ranks and those words; JUnit a case for the world sizes, each rank, the
// replicas and the collective; the JSON report's "distributed" and "world_sizes".
#include "compare/collective_check.h"
#include "compare/finding_facts.h"
#include "compare/replica_check.h"
#include "report/sections.h"
#include "report/svg_plot.h"
#include "report/text_format.h"
#include "report/text_sections.h"

namespace ra::report::text {
namespace {

std::string divergence_place(const compare::Divergence& d) {
  std::string out = std::string(compare::to_string(d.category));
  if (d.step) out += " at step " + std::to_string(*d.step);
  if (!d.tensor.empty()) out += " (" + d.tensor + ")";
  return out;
}

// The buckets through the collective: what differs there first, or that nothing does.
std::string collective(const compare::DistributedFindings& f) {
  if (f.comm_hook.empty())
    return "  collective: not recorded (no DDP communication hook wrapped)\n";
  std::string out;
  if (f.bucket_layout) {
    const compare::BucketLayoutDifference& d = *f.bucket_layout;
    out += "  bucket layouts differ";
    if (d.step) out += format(" at step %lld on rank %d", static_cast<long long>(*d.step), d.rank);
    out += ": " + shown(d.difference) + "\n";
  }
  if (f.collective) {
    out += "  " + shown(compare::describe(*f.collective, f)) + "\n";
  } else if (!f.bucket_layout) {
    out += "  collective: every bucket's inputs and results as in the reference run (hook " +
           shown(f.comm_hook) + ")\n";
  }
  return out;
}

}  // namespace

// Runs of several world sizes: which run had which, and that they part by design.
std::string world_sizes(const ComparisonResult& r) {
  if (!r.world_sizes) return "";
  std::string runs;
  const std::vector<int>& sizes = r.world_sizes->of_runs;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    runs += format(" run %zu %d %s%s", i, sizes[i], sizes[i] == 1 ? "process" : "ranks",
                   i + 1 < sizes.size() ? ";" : "");
  }
  if (!r.world_sizes->configuration) {
    return "world sizes DIFFER within one command:" + runs +
           "\n  the runs of one command came up with different numbers of ranks (a rank that "
           "never started, a launcher given another count): they trained other configurations "
           "than the audit asked for, so the audit fails (exit 1)\n";
  }
  std::string out = "world size as a configuration:" + runs;
  out += " (rank 0's trace stands for a data-parallel run)\n";
  if (r.identity.identical) return out + "  the runs agree nonetheless\n";
  out +=
      "  runs of other world sizes differ by design: each rank trains its share of the global "
      "batch and the all-reduce sums the gradients in another order";
  if (r.first_divergence) out += "; first " + shown(divergence_place(*r.first_divergence));
  out += r.world_sizes->identical_within
             ? "\n  runs of one world size agree: no bug\n"
             : "\n  runs of one world size DIFFER: that is no configuration (exit 1 when "
               "identity is expected)\n";
  return out;
}

std::string distributed(const ComparisonResult& r) {
  const compare::DistributedFindings* found = compare::distributed_of(r);
  if (found == nullptr) return world_sizes(r);
  const compare::DistributedFindings& f = *found;
  std::string nccl;
  for (const auto& [name, value] : f.nccl) nccl += ", " + name + "=" + value;
  std::string out = world_sizes(r);
  out += format("data-parallel: %d ranks on %s%s; rank 0 is compared above\n", f.world_size,
                shown(f.backend).c_str(), nccl.c_str());
  for (const compare::RankComparison& c : f.ranks) {
    if (c.identical) {
      out += format("  rank %d: bitwise identical across runs\n", c.rank);
    } else {
      out += format(
          "  rank %d: DIVERGED across runs, first %s\n", c.rank,
          c.first_divergence ? shown(divergence_place(*c.first_divergence)).c_str() : "(unknown)");
    }
  }
  if (f.replicas_parted) {
    out += "  " + shown(compare::describe(*f.replicas_parted)) + "\n";
  } else {
    out += format(
        "  replicas agree: every rank held rank 0's parameters after every step (%d "
        "run%s checked)\n",
        f.runs_checked, f.runs_checked == 1 ? "" : "s");
  }
  for (const std::string& e : f.expected_differences) out += "  expected: " + shown(e) + "\n";
  out += collective(f);
  return out;
}

}  // namespace ra::report::text

namespace ra::report {
namespace {

using compare::ComparisonResult;
using nlohmann::json;
using svg::html_escaped;

// The first bucket whose collective differs from the reference run's, and its finding in words.
json collective_json(const compare::DistributedFindings& f) {
  if (!f.collective) return nullptr;
  const compare::CollectiveDivergence& d = *f.collective;
  return {{"run", d.run},
          {"step", d.step},
          {"bucket", d.bucket},
          {"params", d.params},
          {"elements", d.elements},
          {"rank", d.rank},
          {"inputs_identical", d.inputs_identical},
          {"cause", d.inputs_identical ? "collective" : "inside_rank"},
          {"comm_hook", d.comm_hook},
          {"finding", compare::describe(d, f)}};
}

json bucket_layout_json(const compare::DistributedFindings& f) {
  if (!f.bucket_layout) return nullptr;
  const compare::BucketLayoutDifference& d = *f.bucket_layout;
  return {{"run", d.run},
          {"step", d.step ? json(*d.step) : json(nullptr)},
          {"rank", d.rank},
          {"difference", d.difference}};
}

// A data-parallel audit's ranks and replicas (docs/distributed.md).
json distributed_json(const compare::DistributedFindings& f) {
  json ranks = json::array();
  for (const compare::RankComparison& c : f.ranks) {
    ranks.push_back({{"rank", c.rank},
                     {"identical", c.identical},
                     {"first_divergence", compare::divergence_json(c.first_divergence)}});
  }
  json nccl = json::object();
  for (const auto& [name, value] : f.nccl) nccl[name] = value;
  json parted = nullptr;
  if (f.replicas_parted) {
    const compare::ReplicaDivergence& d = *f.replicas_parted;
    parted = {{"run", d.run},
              {"step", d.step < 0 ? json(nullptr) : json(d.step)},
              {"tensor", d.tensor.empty() ? json(nullptr) : json(d.tensor)},
              {"rank", d.rank},
              {"reference_rank", 0}};
  }
  return {{"world_size", f.world_size},
          {"backend", f.backend},
          {"nccl", nccl},
          {"ranks", ranks},
          {"runs_checked", f.runs_checked},
          {"replicas_parted", parted},
          {"expected_differences", f.expected_differences},
          {"comm_hook", f.comm_hook.empty() ? json(nullptr) : json(f.comm_hook)},
          {"collective", collective_json(f)},
          {"bucket_layout", bucket_layout_json(f)}};
}

std::string rank_cell(const std::string& content, const std::string& cls = "") {
  return "<td" + (cls.empty() ? "" : " class=\"" + cls + "\"") + ">" + content + "</td>";
}

// The outcome of the finding's part `name` ("rank 1", "replicas"): whether its case fails.
bool named_part_failed(const compare::Finding& f, const std::string& name) {
  for (const compare::FindingPart& p : f.parts) {
    if (p.name == name) return p.outcome == compare::CheckOutcome::failed;
  }
  return false;
}

}  // namespace

std::string data_parallel_text(const ComparisonResult& r, const compare::Finding&) {
  return text::distributed(r);
}

// Each rank's verdict across runs, then the replica check, the collective and the world sizes in
// the text report's words.
std::string data_parallel_html(const ComparisonResult& r, const compare::Finding&) {
  const compare::DistributedFindings* found = compare::distributed_of(r);
  if (found == nullptr && !r.world_sizes) return "";
  std::string out = "<h2>Data parallel</h2>\n";
  if (found != nullptr) {
    out += "<table><tr><th>rank</th><th>across runs</th><th>first divergence</th></tr>\n";
    const auto row = [&](int rank, bool identical, const std::optional<compare::Divergence>& d) {
      out +=
          "<tr>" + rank_cell(std::to_string(rank)) +
          (identical ? rank_cell("identical", "same") : rank_cell("differ", "differs")) +
          rank_cell(d && !identical
                        ? html_escaped(text::category_title(d->category) + ", " + text::where(*d) +
                                       (d->tensor.empty() ? "" : " (" + d->tensor + ")"))
                        : "") +
          "</tr>\n";
    };
    row(0, r.identity.identical, r.first_divergence);
    for (const compare::RankComparison& c : found->ranks)
      row(c.rank, c.identical, c.first_divergence);
    out += "</table>\n";
  }
  return out + "<pre>" + svg::html_lines_escaped(text::cut_long_lines(text::distributed(r))) +
         "</pre>\n";
}

// Each rank's runs (rank 0's are the verdict's), the replicas (a fault whatever the
// expectation), and the collective (fails when it is the cause and identity was expected).
std::vector<JunitCase> data_parallel_cases(const ComparisonResult& r, const compare::Finding& f) {
  std::vector<JunitCase> cases;
  const auto add = [&](const std::string& name, const std::string& message, const char* type) {
    JunitCase c;
    c.name = name;
    c.message = message;
    if (named_part_failed(f, name)) {
      c.outcome = JunitCase::Outcome::failed;
      c.failure_type = type;
      c.detail = text::distributed(r);
    }
    cases.push_back(c);
  };
  if (r.world_sizes) {
    add("world sizes",
        r.world_sizes->configuration ? "a configuration: each world size is a command of its own"
                                     : "the runs of one command came up with different world sizes",
        "world-size");
  }
  const compare::DistributedFindings* found = compare::distributed_of(r);
  if (found == nullptr) return cases;
  for (const compare::RankComparison& rank : found->ranks) {
    add("rank " + std::to_string(rank.rank),
        rank.identical
            ? "bitwise identical across runs"
            : "DIVERGED across runs" + (rank.first_divergence
                                            ? ", first " + text::where(*rank.first_divergence)
                                            : std::string()),
        "divergence");
  }
  add("replicas",
      found->replicas_parted
          ? compare::describe(*found->replicas_parted)
          : text::format("replicas agree (%d runs checked)", found->runs_checked),
      "replicas");
  add("collective",
      found->collective          ? compare::describe(*found->collective, *found)
      : found->comm_hook.empty() ? "not recorded (no DDP communication hook wrapped)"
                                 : "every bucket's inputs and results as in the reference run",
      "collective");
  return cases;
}

// Only for data-parallel runs (a PyTorch script under torch.distributed), and for runs of several
// world sizes (world size as a configuration).
void data_parallel_json(const ComparisonResult& r, const compare::Finding&, json& report) {
  if (const compare::DistributedFindings* found = compare::distributed_of(r))
    report["distributed"] = distributed_json(*found);
  if (r.world_sizes) {
    report["world_sizes"] = {{"of_runs", r.world_sizes->of_runs},
                             {"identical_within", r.world_sizes->identical_within},
                             {"configuration", r.world_sizes->configuration}};
  }
}

}  // namespace ra::report
