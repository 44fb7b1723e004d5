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

}  // namespace

PartingMagnitude parting_magnitude(const PartingSummary& p, const CheckContext& c) {
  if (p.kind != OpParting::Kind::op) return {};
  if (!c.options.load_kept_outputs) return not_measured("not measured (no kept outputs read)");
  const auto a = c.options.load_kept_outputs(0, p.step, p.a_index);
  const auto b = c.options.load_kept_outputs(1, p.step, p.b_index);
  if (!a || !b) {
    return not_measured(std::string("not measured: ") + (!a ? "A" : "B") +
                        " did not keep the op's outputs (the recorder keeps outputs within a "
                        "budget: REPRO_AUDIT_KEEP_BYTES, docs/pytorch.md)");
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
