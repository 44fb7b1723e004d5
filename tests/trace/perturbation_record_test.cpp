// The header's perturbation and the end record's predictions (--seeds all, docs/trace-format.md):
// written and read back as they were; a perturbation that flips more than its bit, a perturbed
// run without one (or one outside the perturbed group) and a predictions file outside the
// trace's folder are bad input naming the field; traces without them read as before.
#include <catch2/catch.hpp>

#include <bit>
#include <string>

#include "core/error.h"
#include "trace/in_memory_traces.h"
#include "trace/trace_io.h"
#include "trace/whole_trace.h"

namespace {

using ra::test::text_with_replaced;
using ra::trace::Trace;

Trace perturbed_trace() {
  Trace t = ra::test::whole_one_step_trace();
  t.header.seed_group = "perturbed";
  t.header.perturbation = ra::trace::Perturbation{"dense_1.weight", 4, 0, 0x3d4ccccd, 0x3d4ccccc};
  t.final->predictions =
      ra::trace::PredictionsRecord{"run-000/predictions.npy", 256, ra::Digest128{1, 2}};
  return t;
}

}  // namespace

TEST_CASE("a perturbation and predictions are written and read back as they were", "[trace]") {
  const Trace plain = ra::test::whole_one_step_trace();
  const std::string text = ra::trace::serialize_trace(plain);
  CHECK(text.find("perturbation") == std::string::npos);
  CHECK(text.find("predictions") == std::string::npos);
  const Trace plain_back = ra::trace::parse_trace(text, "plain");
  CHECK_FALSE(plain_back.header.perturbation);
  CHECK_FALSE(plain_back.final->predictions);

  const Trace t = perturbed_trace();
  const Trace back = ra::trace::parse_trace(ra::trace::serialize_trace(t), "perturbed");
  CHECK(back.header.seed_group == "perturbed");
  CHECK(back.header.perturbation == t.header.perturbation);
  CHECK(back.final->predictions == t.final->predictions);
}

TEST_CASE("a damaged perturbation or predictions record is bad input naming it", "[trace]") {
  const Trace t = perturbed_trace();
  const auto rejected = [](const std::string& text, const std::string& expected) {
    CHECK_THROWS_WITH(ra::trace::parse_trace(text, "t"), Catch::Contains(expected));
  };
  // Two bits flipped: not the one bit the perturbation names.
  rejected(text_with_replaced(t, "\"after_bits\":\"0x3d4ccccc\"", "\"after_bits\":\"0x3d4cccce\""),
           "field 'perturbation.after_bits'");
  rejected(text_with_replaced(t, "\"seed_group\":\"perturbed\"", "\"seed_group\":\"same\""),
           "must be of the \"perturbed\" group");
  Trace unnamed = t;
  unnamed.header.perturbation.reset();
  rejected(ra::trace::serialize_trace(unnamed), "must name its perturbation");
  rejected(text_with_replaced(t, "\"run-000/predictions.npy\"", "\"../elsewhere.npy\""),
           "field 'predictions.file'");
  rejected(text_with_replaced(t, "\"run-000/predictions.npy\"", "\"/tmp/p.npy\""),
           "below the trace's folder");
}
