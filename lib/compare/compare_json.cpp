// JSON form of a comparison (docs/report.md documents every field).
#include <bit>

#include "compare/collective_check.h"
#include "compare/compare.h"
#include "trace/op_names.h"
#include "trace/op_window.h"
#include "trace/trace_io.h"

namespace ra::compare {
namespace {

using nlohmann::json;

json optional_json(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

// max_ulp keeps its meaning (every pair, across zero too) so that a gate reading it never turns
// laxer; max_ulp_same_sign, sign_flips and max_relative say what it cannot (statistics.h).
json difference_json(const TensorDifference& d) {
  return {{"differing", d.differing}, {"sign_flips", d.sign_flips},
          {"max_abs", d.max_abs},     {"max_relative", d.max_relative},
          {"max_ulp", d.max_ulp},     {"max_ulp_same_sign", d.max_ulp_same_sign}};
}

json loss_difference_json(const std::optional<LossDifference>& d) {
  if (!d) return nullptr;
  return {{"step", d->step},
          {"run", d->run},
          {"reference", d->reference},
          {"reference_bits", trace::bits_hex(std::bit_cast<std::uint32_t>(d->reference))},
          {"other", d->other},
          {"other_bits", trace::bits_hex(std::bit_cast<std::uint32_t>(d->other))},
          {"ulp", d->ulp}};
}

json summary_json(const Summary& s) {
  return {{"n", s.n}, {"mean", s.mean}, {"std", s.std}, {"min", s.min}, {"max", s.max}};
}

json ratio_json(const std::optional<RatioEstimate>& r) {
  if (!r) return nullptr;
  return {{"ratio", r->ratio},         {"low", r->low},
          {"high", r->high},           {"confidence", r->confidence},
          {"resamples", r->resamples}, {"trustworthy", r->trustworthy},
          {"warning", r->warning}};
}

json shards_json(const AuditFolderCheck& f) {
  if (f.shards == 0) return nullptr;
  json states = json::array();
  for (const ShardState& s : f.shard_states) {
    states.push_back({{"shard", s.index},
                      {"runs", s.runs},
                      {"missing_runs", s.missing},
                      {"finished", s.finished()},
                      {"running", s.running.empty() ? json(nullptr) : json(s.running)},
                      {"hosts", s.hosts}});
  }
  return {{"count", f.shards}, {"states", states}};
}

json audit_folders_json(const std::vector<AuditFolderCheck>& folders) {
  json out = json::array();
  for (const AuditFolderCheck& f : folders) {
    json missing = json::array(), foreign = json::array();
    for (const MissingRun& m : f.missing_runs) {
      missing.push_back({{"run", m.run},
                         {"reason", m.reason},
                         {"shard", m.shard < 0 ? json(nullptr) : json(m.shard)}});
    }
    for (const ForeignFile& x : f.foreign_files)
      foreign.push_back({{"file", x.file}, {"reason", x.reason}});
    out.push_back({{"folder", f.folder},
                   {"audit_id", f.audit_id.empty() ? json(nullptr) : json(f.audit_id)},
                   {"planned_runs", f.planned_runs},
                   {"runs", f.runs},
                   {"missing_runs", missing},
                   {"foreign_files", foreign},
                   {"notes", f.notes},
                   {"shards", shards_json(f)}});
  }
  return out;
}

json machines_json(const ComparisonResult& r) {
  json out = json::array();
  for (const MachineDifference& d : r.divergent_machines) {
    out.push_back({{"run", d.run}, {"environment", d.environment}, {"ledger", d.ledger}});
  }
  return out;
}

json runs_json(const ComparisonResult& r) {
  json runs = json::array();
  for (const RunSummary& s : r.runs) {
    runs.push_back(
        {{"run", s.run},
         {"source", s.source},
         {"seed_group", s.seed_group},
         {"seeds", {{"init", s.seed_init}, {"data", s.seed_data}, {"dropout", s.seed_dropout}}},
         {"steps", s.steps},
         {"final_loss", s.final_loss},
         {"final_loss_bits", trace::bits_hex(s.final_loss_bits)},
         {"eval_loss", optional_json(s.eval_loss)},
         {"eval_accuracy", optional_json(s.eval_accuracy)},
         {"median_step_ms", s.median_step_seconds * 1e3},
         {"total_seconds", s.total_seconds},
         {"recording_fraction", s.recording_fraction},
         {"recording_method", s.recording_measured ? "calibrated" : "summed"},
         {"outcome_class", s.outcome_class}});
  }
  return runs;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::i32:
      return "i32";
    case DType::i64:
      return "i64";
    case DType::u8:
      return "u8";
  }
  return "?";
}

json output_differences_json(const trace::OpRecord& op,
                             const std::vector<RootCause::OutputDifference>& differences) {
  json outputs = json::array();
  for (const RootCause::OutputDifference& d : differences) {
    const bool f32 = d.dtype == DType::f32;
    outputs.push_back(
        {{"output", trace::op_output_name(op, d.output)},
         {"index", d.output},
         {"dtype", dtype_name(d.dtype)},
         {"elements", d.elements},
         {"differing", d.difference.differing},
         {"sign_flips", f32 ? json(d.difference.sign_flips) : json(nullptr)},
         {"max_abs", f32 ? json(d.difference.max_abs) : json(nullptr)},
         {"max_relative", f32 ? json(d.difference.max_relative) : json(nullptr)},
         {"max_ulp", f32 ? json(d.difference.max_ulp) : json(nullptr)},
         {"max_ulp_same_sign", f32 ? json(d.difference.max_ulp_same_sign) : json(nullptr)}});
  }
  return outputs;
}

json magnitude_json(const RootCause& c) {
  if (!c.magnitude) return nullptr;
  const RootCause::Magnitude& m = *c.magnitude;
  json runs = json::array();
  for (const RootCause::RunMagnitude& r : m.runs) {
    runs.push_back({{"run", r.run}, {"outputs", output_differences_json(c.record, r.outputs)}});
  }
  json kept_replays = json::array();
  for (const KeptOpReplay& r : m.kept_replays) {
    kept_replays.push_back({{"run", r.run},
                            {"times", r.times},
                            {"distinct_outputs", r.distinct_outputs},
                            {"matches_run", r.matches_run}});
  }
  return {{"runs", runs},
          {"kept_replays", kept_replays},
          {"kept", m.kept},
          {"replays", m.replays},
          {"executions", m.executions},
          {"distinct_outputs", m.distinct_outputs},
          {"spread", output_differences_json(c.record, m.spread)},
          {"note", m.note.empty() ? json(nullptr) : json(m.note)}};
}

json root_cause_json(const RootCause& c) {
  json in = json::array(), out = json::array(), chain = json::array();
  for (std::size_t i : c.differing_inputs) in.push_back(trace::op_input_name(c.record, i));
  for (std::size_t i : c.differing_outputs) out.push_back(trace::op_output_name(c.record, i));
  for (const RootCause::Link& l : c.chain) {
    chain.push_back({{"record", l.index},
                     {"op", l.op},
                     {"layer", l.layer},
                     {"inputs_identical", l.inputs_identical}});
  }
  const bool before_steps = c.step < 0;  // the initial weights
  // The class of an op's cause; the batch is data, no kernel, and has none.
  const bool classified = c.kind == RootCause::Kind::op && c.record.op != "batch";
  return {{"kind", to_string(c.kind)},
          {"cause", classified ? json(to_string(c.cause)) : json(nullptr)},
          {"algorithms", algorithm_groups_json(c.algorithms)},
          {"environment_keys", c.environment_keys},
          {"step", before_steps ? json(nullptr) : json(c.step)},
          {"epoch", before_steps ? json(nullptr) : json(c.epoch)},
          {"batch", before_steps ? json(nullptr) : json(c.batch)},
          {"record", c.record.op.empty() ? json(nullptr) : json(c.index)},
          {"op", c.record.op.empty() ? json(nullptr) : json(c.record.op)},
          {"layer", c.record.op.empty() ? json(nullptr) : json(c.record.layer)},
          {"mode", c.record.mode.empty() ? json(nullptr) : json(c.record.mode)},
          {"ledger_key", c.record.ledger_key.empty() ? json(nullptr) : json(c.record.ledger_key)},
          {"algorithm", c.algorithm.empty() ? json(nullptr) : json(c.algorithm)},
          {"algorithm_deterministic",
           c.algorithm_deterministic ? json(*c.algorithm_deterministic) : json(nullptr)},
          {"differing_inputs", in},
          {"differing_outputs", out},
          {"detail", c.detail},
          {"chain", chain},
          {"step_records", c.step_records},
          {"runs", c.runs},
          {"magnitude", magnitude_json(c)}};
}

json root_causes_json(const ComparisonResult& r) {
  json causes = json::array();
  for (const RootCause& c : r.root_cause.causes) causes.push_back(root_cause_json(c));
  return causes;
}

json categories_json(const ComparisonResult& r) {
  json categories = json::object();
  for (const CategoryVerdict& v : r.categories) {
    categories[to_string(v.category)] = {{"identical", v.identical},
                                         {"first_divergence", divergence_json(v.first)},
                                         {"steps_differing", v.steps_differing}};
  }
  return categories;
}

json growth_json(const ComparisonResult& r) {
  json growth = json::array();
  for (const EpochGrowth& g : r.growth.epochs) {
    growth.push_back(
        {{"epoch", g.epoch},
         {"max_abs_loss_difference", g.max_abs_loss_difference},
         {"max_loss_ulp", g.max_loss_ulp},
         {"weights_differing", g.weights_differing ? json(*g.weights_differing) : json(nullptr)},
         {"max_abs_eval_accuracy_difference", optional_json(g.max_abs_eval_accuracy_difference)},
         {"snapshot", g.snapshot ? difference_json(*g.snapshot) : json(nullptr)}});
  }
  return growth;
}

json snapshots_json(const ComparisonResult& r) {
  json snapshots = json::array();
  for (const SnapshotDivergence& s : r.snapshots) {
    json tensors = json::array();
    for (const TensorDivergence& t : s.tensors) {
      json jt = difference_json(t.difference);
      jt["tensor"] = t.tensor;
      tensors.push_back(jt);
    }
    snapshots.push_back({{"point", s.point},
                         {"step", s.step ? json(*s.step) : json(nullptr)},
                         {"total", difference_json(s.total)},
                         {"tensors", tensors}});
  }
  return snapshots;
}

json statistics_json(const ComparisonResult& r) {
  json statistics = json::object();
  for (const GroupStatistics& g : r.seed_groups.groups) {
    statistics[g.group] = {{"final_loss", summary_json(g.final_loss)},
                           {"eval_accuracy", summary_json(g.eval_accuracy)},
                           {"median_step_ms", summary_json(g.median_step_ms)}};
  }
  return statistics;
}

// The next step: "trace_ops" (the window and, when known, the command) or "watch_loader", with
// the lines the text report prints (`advice`); null when there is none.
json next_step_json(const ComparisonResult& r) {
  if (r.next_step.loader_advice) {
    return {{"kind", "watch_loader"},
            {"advice", next_step_advice(r)},
            {"trace_ops", nullptr},
            {"command", nullptr}};
  }
  if (!r.next_step.trace_ops) return nullptr;
  return {{"kind", "trace_ops"},
          {"advice", next_step_advice(r)},
          {"trace_ops", to_string(*r.next_step.trace_ops)},
          {"tensor_digests",
           r.next_step.tensor_digests ? json(to_string(*r.next_step.trace_ops)) : json(nullptr)},
          {"command", r.next_step.command.empty() ? json(nullptr) : json(r.next_step.command)}};
}

}  // namespace

json algorithm_groups_json(const std::vector<AlgorithmGroup>& groups) {
  json out = json::array();
  for (const AlgorithmGroup& g : groups) {
    out.push_back({{"runs", g.runs},
                   {"algorithm", g.algorithm.empty() ? json(nullptr) : json(g.algorithm)},
                   {"deterministic", g.deterministic ? json(*g.deterministic) : json(nullptr)},
                   {"chosen_by", g.chosen_by.empty() ? json(nullptr) : json(g.chosen_by)},
                   {"math_type", g.math_type.empty() ? json(nullptr) : json(g.math_type)},
                   {"autotune_ms", g.autotune_ms}});
  }
  return out;
}

json divergence_json(const std::optional<Divergence>& d) {
  if (!d) return nullptr;
  json out{{"category", to_string(d->category)},
           {"step", d->step ? json(*d->step) : json(nullptr)},
           {"epoch", d->step ? json(d->epoch) : json(nullptr)},
           {"batch", d->step ? json(d->batch) : json(nullptr)},
           {"tensor", d->per_category ? json(nullptr) : json(d->tensor)},
           {"runs_differing", d->runs_differing}};
  if (d->per_category) out["per_category"] = true;    // the step held one digest per category
  if (!d->detail.empty()) out["detail"] = d->detail;  // category steps: the counts in words
  return out;
}

json to_json(const ComparisonResult& r) {
  json report{{"report_version", 1},
              {"spec", {{"name", r.subject.spec_name}, {"digest", r.subject.spec_digest}}},
              {"mode", r.subject.mode_summary},
              {"verdict",
               {{"identical", r.identity.identical},
                {"expect_identical", r.identity.expect_identical},
                {"within_tolerance", r.losses.within_tolerance},
                {"loss_tolerance", r.losses.tolerance},
                {"diverged", r.diverged()},
                {"complete", !r.incomplete()},
                {"nothing_compared", r.nothing_compared()},
                {"allow_empty", r.identity.allow_empty},
                {"classes", r.identity.classes},
                {"compared_runs", r.identity.compared_runs}}},
              {"first_divergence", divergence_json(r.first_divergence)},
              {"next_step", next_step_json(r)},
              {"categories", categories_json(r)},
              {"first_loss_difference", loss_difference_json(r.losses.first)},
              {"final_loss_difference", loss_difference_json(r.losses.final)},
              {"growth", growth_json(r)},
              {"snapshots", snapshots_json(r)},
              {"statistics", statistics_json(r)},
              {"std_ratio",
               {{"final_loss", ratio_json(r.seed_groups.loss_std_ratio)},
                {"eval_accuracy", ratio_json(r.seed_groups.accuracy_std_ratio)}}},
              {"divergent_machines", machines_json(r)},
              {"copies", r.sources.copies},
              {"audit_folders", audit_folders_json(r.sources.audit_folders)},
              {"ignored_snapshots", r.sources.ignored_snapshots},
              {"runs", runs_json(r)}};
  // Only with op records (--trace-ops), so that reports of traces without them read as before.
  if (r.root_cause.ops_traced) {
    report["op_window"] =
        r.root_cause.op_window ? json(to_string(*r.root_cause.op_window)) : json(nullptr);
    report["root_causes"] = root_causes_json(r);
  }
  // Only where a registered check applied (compare/checks.h), so that other reports read as before.
  const nlohmann::json findings = findings_json(r.findings);
  if (!findings.empty()) report["findings"] = findings;
  return report;
}

}  // namespace ra::compare
