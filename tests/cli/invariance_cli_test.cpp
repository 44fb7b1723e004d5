// `repro-audit exec --invariance` (docs/invariance.md) end to end with a stand-in producer: a
// Python script without torch that reads the plan from REPRO_AUDIT_INVARIANCE and writes a sweep
// as the recorder would (the recorder's own sweeps: tests/python/test_invariance*.py). Exit codes
// 0, 1, 6 and 3, the report files against the exit code, and the options a sweep refuses.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"

using Catch::Matchers::Contains;
using namespace ra::test;

namespace {

// argv[1]: invariant | breaks | nocontrol | nocall | crash. The anchor's output row digest is
// 1 alone; "breaks" gives sizes >= 3 another row from the same inputs at op 0.
constexpr const char* kProducer = R"PY(
import json, os, sys
how = sys.argv[1]
if how == "crash":
    print("Traceback: model exploded", file=sys.stderr)
    sys.exit(7)
if how == "nocall":
    sys.exit(0)
plan = json.loads(os.environ["REPRO_AUDIT_INVARIANCE"])
d = lambda n: "%032x" % n
def probe(size, row, position, out, control=False):
    return {"probe": {"batch_size": size, "anchor_row": row, "position": position,
                      "neighbours": "" if size == 1 else "batch", "control": control},
            "output": {"digest": d(out)},
            "ops": [{"op": "aten.addmm.default", "module": "fc",
                     "inputs": [{"digest": d(1), "whole": False}, {"digest": d(2), "whole": True}],
                     "output": {"digest": d(out), "whole": False}}]}
rows = {"first": lambda s: 0, "middle": lambda s: s // 2, "last": lambda s: s - 1}
lines = [{"kind": "repro-audit invariance sweep", "version": 1, "source": "pytorch",
          "model": "Stand-in", "mode": "", "device": "cpu", "dtype": "torch.float32",
          "batch_dim": 0, "sample_shape": [4], "output_shape": [4],
          "control": None if how == "nocontrol" else
                     {"op_index": 0, "op": "aten.addmm.default", "module": "fc"}},
         probe(1, 0, "first", 10)]
probes = []
for s in plan["sizes"][1:]:
    for p in plan["positions"]:
        probes.append(probe(s, rows[p](s), p, 11 if how == "breaks" and s >= 3 else 10))
if how != "nocontrol":
    probes.append(probe(plan["sizes"][1], 0, "first", 12, True))
lines += probes + [{"end": {"probes": len(probes)}}]
with open(plan["out"], "w") as f:
    f.write("".join(json.dumps(l) + "\n" for l in lines))
)PY";

struct Sweep {
  TempDir dir;
  std::filesystem::path script = dir.write("producer.py", kProducer);
  CliResult run(const std::string& how, const std::string& options = "") const {
    return run_cli("exec --invariance --out " + quoted(dir.path() / "out") + " " + options +
                   " -- python3 " + quoted(script) + " " + how);
  }
};

}  // namespace

TEST_CASE("exec --invariance: invariant with its control seen exits 0", "[cli][invariance]") {
  Sweep s;
  const CliResult r = s.run("invariant", "--sizes 1-4 --json " + quoted(s.dir.path() / "r.json"));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("batch invariance: INVARIANT") && Contains("all 9 probe(s)"));
  CHECK_THAT(r.out, Contains("control: one ULP injected at aten.addmm.default in fc"));
  const auto json = nlohmann::json::parse(read_text(s.dir.path() / "r.json"));
  CHECK(json["exit_code"] == 0);
  CHECK(json["findings"]["invariance"]["outcome"] == "passed");
  CHECK(json["findings"]["invariance"]["data"]["probes"].size() == 9);
}

TEST_CASE("exec --invariance: a batch-dependent op exits 1 and is named", "[cli][invariance]") {
  Sweep s;
  const CliResult r = s.run(
      "breaks", "--sizes 1-4 --positions first,last --junit " + quoted(s.dir.path() / "r.xml"));
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Contains("NOT INVARIANT") && Contains("first at batch size 3"));
  CHECK_THAT(r.out, Contains("aten.addmm.default in fc (op 0)"));
  CHECK_THAT(read_text(s.dir.path() / "r.xml"), Contains("<failure "));
  SECTION("--expect any allows it") {
    CHECK(s.run("breaks", "--sizes 1-4 --expect any").exit_code == 0);
  }
}

TEST_CASE("exec --invariance: without a control, exit 6", "[cli][invariance]") {
  Sweep s;
  const CliResult r = s.run("nocontrol", "--sizes 1-3 --json -");
  CHECK(r.exit_code == 6);
  const auto json = nlohmann::json::parse(r.out);
  CHECK(json["findings"]["invariance"]["outcome"] == "inconclusive");
}

TEST_CASE("exec --invariance: a failed or silent command is named", "[cli][invariance]") {
  Sweep s;
  const CliResult crashed = s.run("crash", "--sizes 1-2");
  CHECK(crashed.exit_code == 3);
  CHECK_THAT(crashed.err, Contains("exit status 7") && Contains("model exploded"));
  const CliResult silent = s.run("nocall", "--sizes 1-2");
  CHECK(silent.exit_code == 3);
  CHECK_THAT(silent.err, Contains("never called repro_audit.invariance"));
}

TEST_CASE("exec --invariance refuses what a sweep does not take", "[cli][invariance]") {
  Sweep s;
  const CliResult runs = s.run("invariant", "--runs 3 --seeds both");
  CHECK(runs.exit_code == 2);
  CHECK_THAT(runs.err, Contains("--runs, --seeds does not apply"));
  const CliResult zero = s.run("invariant", "--sizes 0-4");
  CHECK(zero.exit_code == 2);
  CHECK_THAT(zero.err, Contains("batch sizes start at 1"));
  const CliResult one = s.run("invariant", "--sizes 1");
  CHECK(one.exit_code == 2);
  CHECK_THAT(one.err, Contains("a batch size above 1"));
}

TEST_CASE("run --invariance: the engine's sweep of quick.json", "[cli][invariance]") {
  TempDir dir;
  const std::string spec = quoted(std::filesystem::path(source_path("configs/quick.json")));
  const std::string out = " --out " + quoted(dir.path() / "sweep");
  const CliResult r = run_cli("run " + spec + " --invariance --sizes 1-6 --threads 2" + out +
                              " --json " + quoted(dir.path() / "r.json"));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("batch invariance: INVARIANT") && Contains("control was seen"));
  const auto json = nlohmann::json::parse(read_text(dir.path() / "r.json"));
  const auto& data = json["findings"]["invariance"]["data"];
  CHECK(data["source"] == "engine");
  CHECK(data["mode"] == "deterministic");
  CHECK(data["control"]["detected"] == true);
  CHECK(data["probes"].size() == 14);  // sizes 2-6 at three positions, size 2 at two rows
  // The file the sweep wrote is whole: compare's reader takes it (the exec path reads it so).
  CHECK(std::filesystem::exists(dir.path() / "sweep" / "invariance.jsonl"));

  SECTION("without the control: inconclusive, exit 6") {
    const CliResult none = run_cli("run " + spec + " --invariance --sizes 1-3 --no-control" + out);
    CHECK(none.exit_code == 6);
    CHECK_THAT(none.out, Contains("INCONCLUSIVE"));
  }
  SECTION("the options of an audit of runs are refused") {
    const CliResult refused = run_cli("run " + spec + " --invariance --runs 3" + out);
    CHECK(refused.exit_code == 2);
    CHECK_THAT(refused.err, Contains("--runs does not apply"));
  }
}
