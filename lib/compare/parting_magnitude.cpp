// The magnitude of the op where two programs part (compare/parting_magnitude.h).
#include "compare/parting_magnitude.h"

#include <cstdio>

#include "compare/compare.h"
#include "compare/output_difference.h"

namespace ra::compare {
namespace {

std::string output_line(const RootCause::OutputDifference& d) {
  char text[200];
  if (d.dtype == DType::f32) {
    std::snprintf(text, sizeof text,
                  "output %zu: %lld of %lld elements differ, max |A-B| %.3g (%.3g of the largest "
                  "magnitude), max %llu ulp",
                  d.output, static_cast<long long>(d.difference.differing),
                  static_cast<long long>(d.elements), d.difference.max_abs,
                  d.difference.max_relative, static_cast<unsigned long long>(d.difference.max_ulp));
  } else {
    std::snprintf(text, sizeof text, "output %zu: %lld of %lld elements differ", d.output,
                  static_cast<long long>(d.difference.differing),
                  static_cast<long long>(d.elements));
  }
  return text;
}

nlohmann::json output_json(const RootCause::OutputDifference& d) {
  nlohmann::json j{
      {"output", d.output}, {"elements", d.elements}, {"differing", d.difference.differing}};
  if (d.dtype == DType::f32) {
    j["max_abs"] = d.difference.max_abs;
    j["max_relative"] = d.difference.max_relative;
    j["max_ulp"] = d.difference.max_ulp;
  }
  return j;
}

PartingMagnitude not_measured(const std::string& why) {
  return {{"its magnitude: " + why}, {{"note", why}}};
}

using Kept = ComparisonOptions::KeptRecordOutputs;

// The kept outputs at `positions` (the aligned op's, of a record that has more: the engine
// against PyTorch, compare/op_families.h), or all of them when none are named.
std::optional<Kept> outputs_at(std::optional<Kept> kept,
                               const std::vector<std::size_t>& positions) {
  if (!kept || positions.empty()) return kept;
  Kept out;
  for (std::size_t p : positions) {
    if (p >= kept->bytes.size()) return std::nullopt;
    out.bytes.push_back(std::move(kept->bytes[p]));
    out.dtypes.push_back(kept->dtypes[p]);
  }
  return out;
}

// Why side `side` (0: A) has no outputs of the parting record: the engine keeps none; a PyTorch
// run keeps those of order-dependent ops within a budget.
std::string why_not_kept(const PartingSummary& p, const CheckContext& c, int side) {
  const char* name = side == 0 ? "A" : "B";
  if (!c.traces.at(static_cast<std::size_t>(side)).header.backend.starts_with("pytorch"))
    return std::string(name) + ", the engine's run, keeps no op outputs beside its trace";
  const std::vector<std::string>& run = side == 0 ? p.a_run : p.b_run;
  const std::string op = run.empty() ? (side == 0 ? p.a.op : p.b.op) : run.back();
  return std::string(name) + " did not keep the op's outputs (" + op +
         ": the recorder keeps order-dependent ops' outputs, within REPRO_AUDIT_KEEP_BYTES)";
}

}  // namespace

PartingMagnitude parting_magnitude(const PartingSummary& p, const CheckContext& c) {
  if (p.kind != OpParting::Kind::op) return {};
  if (!c.options.load_kept_outputs) return not_measured("not measured (no kept outputs read)");
  const auto a = outputs_at(c.options.load_kept_outputs(0, p.step, p.a_index), p.a_outputs);
  const auto b = outputs_at(c.options.load_kept_outputs(1, p.step, p.b_index), p.b_outputs);
  if (!a || !b) {
    return not_measured("not measured: " +
                        (!a && !b ? why_not_kept(p, c, 0) + "; " + why_not_kept(p, c, 1)
                                  : why_not_kept(p, c, !a ? 0 : 1)));
  }
  if (a->dtypes != b->dtypes || a->bytes.size() != b->bytes.size()) {
    return not_measured("not measured: the two records' outputs are of other types");
  }
  for (std::size_t i = 0; i < a->bytes.size(); ++i) {
    if (a->bytes[i].size() != b->bytes[i].size()) {
      return not_measured("not measured: output " + std::to_string(i) + " has other sizes");
    }
  }
  PartingMagnitude m;
  m.data = {{"outputs", nlohmann::json::array()}};
  for (const RootCause::OutputDifference& d : output_differences(a->bytes, b->bytes, a->dtypes)) {
    m.lines.push_back("its magnitude, " + output_line(d));
    m.data["outputs"].push_back(output_json(d));
  }
  return m;
}

}  // namespace ra::compare
