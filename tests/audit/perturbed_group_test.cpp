// The perturbed group (--seeds all, docs/statistics.md) on the CPU engine: exactly one bit of one
// initial weight differs from the unperturbed run, the one the trace names; deterministic runs of
// the group part from the same-seed runs exactly there, which the comparison reports by design
// and never as an unexplained difference; predictions are kept whole beside each trace.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "audit/audit.h"
#include "compare/compare.h"
#include "compare/finding_facts.h"
#include "core/error.h"
#include "nn/weight_perturbation.h"
#include "rundir/predictions_file.h"
#include "spec/parse.h"
#include "support/audit_options.h"
#include "support/temp_dir.h"
#include "trace/trace_io.h"
#include "train/trainer.h"

namespace {

namespace fs = std::filesystem;

ra::spec::ExperimentSpec perturbed_spec() {
  return ra::spec::parse_spec(nlohmann::json::parse(R"({
    "name": "perturb-test", "seed": 9, "threads": 1,
    "data": {"train": {"format": "random", "samples": 32, "shape": [1, 6, 6], "classes": 3},
             "eval": {"format": "random", "samples": 20, "shape": [1, 6, 6], "classes": 3, "seed": 2},
             "batch_size": 8},
    "model": {"input": [1, 6, 6], "layers": [
      {"type": "conv2d", "filters": 2, "kernel": 3, "activation": "relu"},
      {"type": "flatten"}, {"type": "dropout", "rate": 0.2}, {"type": "dense", "units": 3}]},
    "optimizer": {"type": "sgd", "lr": 0.05},
    "train": {"epochs": 2}})"),
                              ".");
}

struct BitDifference {
  std::string tensor;
  std::int64_t element = 0;
  std::uint32_t xor_bits = 0;
};

// Every element whose bits differ between two models' parameters.
std::vector<BitDifference> differences(const ra::nn::Model& a, const ra::nn::Model& b) {
  std::vector<BitDifference> out;
  for (std::size_t p = 0; p < a.params().size(); ++p) {
    const ra::Tensor& x = a.params()[p]->value;
    const ra::Tensor& y = b.params()[p]->value;
    for (std::int64_t i = 0; i < x.size(); ++i) {
      const auto bx = std::bit_cast<std::uint32_t>(x[i]), by = std::bit_cast<std::uint32_t>(y[i]);
      if (bx != by) out.push_back({a.params()[p]->name, i, bx ^ by});
    }
  }
  return out;
}

}  // namespace

TEST_CASE("a perturbed run starts one bit of one weight away from the same seed", "[audit]") {
  const auto spec = perturbed_spec();
  const auto data = ra::train::load_data(spec);
  ra::train::Trainer plain(spec, data);
  std::vector<std::string> tensors;
  for (std::uint64_t draw : {0u, 1u, 2u, 3u, 4u, 5u}) {
    ra::train::RunOptions o;
    o.perturb_draw = draw;
    ra::train::Trainer perturbed(spec, data, o);
    REQUIRE(perturbed.perturbation());
    const ra::nn::WeightPerturbation& w = *perturbed.perturbation();
    const std::vector<BitDifference> d = differences(plain.model(), perturbed.model());
    REQUIRE(d.size() == 1);
    CHECK(d[0].tensor == w.tensor);
    CHECK(d[0].element == w.element);
    CHECK(d[0].xor_bits == 1u);  // the lowest mantissa bit, and nothing else
    CHECK((w.before ^ w.after) == 1u);
    // The draw alone decides the weight: the stream "perturb/weight" of the init seed.
    const ra::nn::WeightPerturbation again = ra::nn::choose_weight(plain.model(), spec.seed, draw);
    CHECK(again.tensor == w.tensor);
    CHECK(again.element == w.element);
    tensors.push_back(w.tensor + "[" + std::to_string(w.element) + "]");
  }
  std::sort(tensors.begin(), tensors.end());
  CHECK(std::unique(tensors.begin(), tensors.end()) - tensors.begin() > 1);  // not one weight
}

TEST_CASE("seeds all: the perturbed runs part at their weight, by design", "[audit]") {
  ra::test::TempDir dir;
  ra::audit::AuditOptions o = ra::test::audit_options_in(dir.path, 2);
  o.seeds = ra::audit::SeedPolicy::all;
  o.mode = ra::spec::KernelMode::nondeterministic;  // the perturbed group is deterministic anyway
  const ra::audit::AuditResult result = ra::audit::run_audit(perturbed_spec(), o);
  const ra::compare::ComparisonResult& r = result.comparison;
  REQUIRE(r.runs.size() == 6);
  CHECK(r.identity.compared_runs == std::vector<int>{0, 1});  // the perturbed runs are not compared
  REQUIRE(ra::compare::instability_of(r) != nullptr);
  REQUIRE(ra::compare::instability_of(r)->perturbed.size() == 2);
  for (const ra::compare::PerturbedRunCheck& c : ra::compare::instability_of(r)->perturbed) {
    CHECK(c.parts_at_perturbation());
    CHECK((c.perturbation.before ^ c.perturbation.after) == 1u);
  }
  for (const std::string& w : ra::compare::warnings_of(r))
    CHECK(w.find("perturbed run") == std::string::npos);
  REQUIRE(ra::compare::instability_of(r)->metrics.size() == 3);
  CHECK(ra::compare::instability_of(r)->metrics[2].metric == "disagreement");
  CHECK_FALSE(ra::compare::instability_of(r)->metrics[2].interpretation.empty());

  // The traces: each perturbed run deterministic, and against run 0 its first divergence is its
  // flipped weight's tensor, before step 0.
  std::vector<ra::trace::Trace> traces;
  for (const fs::path& f : result.trace_files) traces.push_back(ra::trace::read_trace(f));
  for (int run : {4, 5}) {
    const ra::trace::Trace& t = traces[static_cast<std::size_t>(run)];
    CHECK(t.header.determinism["mode"] == "deterministic");
    ra::trace::Trace as_same = t;
    as_same.header.seed_group = "same";
    as_same.header.perturbation.reset();
    const ra::compare::ComparisonResult pair =
        ra::compare::compare_traces({traces[0], as_same}, {});
    REQUIRE(pair.first_divergence);
    CHECK(pair.first_divergence->category == ra::compare::Category::initial_weights);
    CHECK(pair.first_divergence->tensor == t.header.perturbation->tensor);
    // The predictions file holds what the trace recorded.
    REQUIRE(t.final->predictions);
    CHECK(ra::rundir::read_predictions_file(result.trace_files[static_cast<std::size_t>(run)],
                                            *t.final->predictions)
              .size() == 20);
  }
}

TEST_CASE("a predictions file that is not what its trace recorded is refused", "[audit]") {
  ra::test::TempDir dir;
  const fs::path trace = dir.path / "run-000.trace.jsonl";
  const std::vector<std::int32_t> classes = {0, 2, 1, 1};
  const ra::trace::PredictionsRecord record = ra::rundir::write_predictions(trace, classes);
  CHECK(record.file == "run-000/predictions.npy");
  CHECK(record.samples == 4);
  CHECK(ra::rundir::read_predictions_file(trace, record) == std::vector<std::int64_t>{0, 2, 1, 1});
  const std::vector<std::int32_t> other = {0, 2, 1, 2};
  ra::rundir::write_predictions(trace, other);
  CHECK_THROWS_WITH(ra::rundir::read_predictions_file(trace, record),
                    Catch::Contains("is not the") && Catch::Contains("predictions.npy"));
}
