"""Two programs' op records aligned (`repro-audit compare A B --align`, docs/equivalence.md
"Aligning two programs' ops"), issue 63's worked case (c): one small model with its LayerNorm
written out (mean, var, sub, div, mul, add) and with nn.LayerNorm (scripts/layer_norm_two_ways.py),
each recorded by `exec --runs 1 --trace-ops 0`. The alignment names model.norm as where the two
part, with the stretch of ops only one of them runs there; its negative control, the library
variant recorded twice, passes with every op aligned and agreeing. What cannot be aligned (no op
records, op windows at different steps, parameters of other names) exits 2 naming the problem.
The tool runs through conftest.py's `tool` (REPRO_AUDIT_BINARY names the built binary; CTest sets
it)."""
import json
import os
import sys

import pytest

pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "scripts", "layer_norm_two_ways.py")


def record(tool, tmp_path, name, variant, *options):
    """One run of the variant under exec; the path of its trace. The caller's CPU settings pass
    through (tests/README.md): nothing here depends on them."""
    out = tmp_path / name
    done = tool("exec", "--runs", 1, "--allow-empty", "--out", out, *options, "--",
                sys.executable, SCRIPT, variant)
    assert done.returncode == 0, done.stderr
    return str(out / "run-000.trace.jsonl")


def compare(tool, *arguments):
    """compare --align of the traces: (exit code, JSON report or None, stderr)."""
    done = tool("compare", "--json", "-", *arguments)
    return done.returncode, json.loads(done.stdout) if done.stdout else None, done.stderr


@pytest.fixture(scope="module")
def traces(tmp_path_factory, tool):
    folder = tmp_path_factory.mktemp("align")
    return {name: record(tool, folder, name, variant, *options) for name, variant, options in [
        ("manual", "manual", ["--trace-ops", "0"]),
        ("library", "library", ["--trace-ops", "0"]),
        ("library_again", "library", ["--trace-ops", "0"]),
    ]}


def test_the_manual_layer_norm_parts_from_the_library_one_in_the_norm(tool, traces):
    code, report, stderr = compare(tool, traces["manual"], traces["library"], "--align")
    assert code == 1, stderr
    finding = report["findings"]["op_alignment"]
    assert finding["outcome"] == "failed"
    assert "the programs part at step 0 in model.norm" in finding["summary"], finding["summary"]
    parting = finding["data"]["parting"]
    # The written-out norm's ops against the fused one, found by what the next aligned op reads:
    # its input, the norm's output (through the activation), differs.
    assert parting["kind"] == "stretch" and parting["step"] == 0
    stretch = parting["stretch"]
    assert stretch["a"]["layers"] == stretch["b"]["layers"] == "model.norm"
    assert stretch["b"]["ops"] == ["aten.native_layer_norm.default"]
    assert {"aten.mean.dim", "aten.sqrt.default"} <= set(stretch["a"]["ops"]), stretch
    assert stretch in finding["data"]["stretches"]
    # Everything before the norm aligned and agreed; the modules around it align.
    (step,) = finding["data"]["steps"]
    assert step["aligned"] > 0 and step["records_a"] > step["records_b"]
    # Forward and backward: every unaligned stretch is the norm's.
    assert {s["a"]["layers"] or s["b"]["layers"] for s in finding["data"]["stretches"]} == {
        "model.norm"}
    assert report["verdict"]["diverged"]


def test_the_same_program_twice_aligns_every_op(tool, traces):
    code, report, stderr = compare(tool, traces["library"], traces["library_again"], "--align")
    assert code == 0, stderr
    finding = report["findings"]["op_alignment"]
    assert finding["outcome"] == "passed", finding["summary"]
    assert finding["data"]["parting"] is None and finding["data"]["stretches_total"] == 0
    (step,) = finding["data"]["steps"]
    assert step["aligned"] == step["records_a"] == step["records_b"] > 0


def test_without_align_nothing_changes(tool, traces):
    code, report, stderr = compare(tool, traces["manual"], traces["library"])
    assert code == 2 and "traces come from different specs" in stderr, stderr
    code, report, stderr = compare(tool, traces["library"], traces["library_again"])
    assert code == 0, stderr
    assert "findings" not in report


def test_what_cannot_be_aligned_is_named(tool, tmp_path, traces):
    no_ops = record(tool, tmp_path, "no_ops", "library")
    code, _, stderr = compare(tool, traces["manual"], no_ops, "--align")
    assert code == 2 and no_ops + " has no op records" in stderr, stderr
    step_1 = record(tool, tmp_path, "step_1", "library", "--trace-ops", "1")
    code, _, stderr = compare(tool, traces["manual"], step_1, "--align")
    assert code == 2 and "op windows at different steps" in stderr, stderr
    assert "--trace-ops 0:1" in stderr and "--trace-ops 1:2" in stderr, stderr
    renamed = record(tool, tmp_path, "renamed", "renamed", "--trace-ops", "0")
    code, report, stderr = compare(tool, traces["library"], renamed, "--align")
    assert code == 2 and report is None, stderr
    assert "do not pair up by name" in stderr and "norm.weight, norm.bias" in stderr, stderr
    assert "norm.gamma, norm.beta" in stderr, stderr
    code, _, stderr = compare(tool, traces["manual"], traces["library"], traces["library_again"],
                              "--align")
    assert code == 2 and "the third trace of --align is the control" in stderr, stderr
    code, _, stderr = compare(tool, traces["manual"], traces["library"],
                              traces["library_again"], traces["library_again"], "--align")
    assert code == 2 and "--align compares two traces" in stderr, stderr
