"""The magnitude of the op where two programs part (`compare A B --align`, docs/equivalence.md
"Aligning two programs' ops"): one program run with 1 and with 2 intra-op threads
(scripts/sum_two_thread_counts.py), whose full sum over 65,536 elements PyTorch splits among its
threads. The alignment names aten.sum.default in `model` as the op that read equal inputs and
wrote another output, and how far apart its outputs are, from the outputs each run kept
(kept-outputs.bin). Its control: the 1-thread program twice, where nothing parts and no magnitude
is given; and a run whose kept outputs are gone, where the magnitude says it was not measured."""
import json
import os
import sys

import pytest

pytest.importorskip("torch")

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts",
                      "sum_two_thread_counts.py")


@pytest.fixture
def record(tool, tmp_path):
    def run(name, threads):
        out = tmp_path / name
        done = tool("exec", "--runs", "1", "--allow-empty", "--trace-ops", "0", "--out", out,
                    "--", sys.executable, SCRIPT, threads)
        assert done.returncode == 0, done.stderr
        return out / "run-000.trace.jsonl"
    return run


def alignment(tool, a, b):
    done = tool("compare", a, b, "--align", "--json", "-")
    return done.returncode, json.loads(done.stdout)["findings"]["op_alignment"]


def test_the_parting_sum_is_named_with_how_far_apart_its_outputs_are(tool, record):
    code, finding = alignment(tool, record("one", 1), record("two", 2))
    assert code == 1
    parting = finding["data"]["parting"]
    assert parting["kind"] == "op" and parting["op"] == "aten.sum.default"
    assert parting["layer"] == "model"
    [output] = parting["magnitude"]["outputs"]
    assert output["output"] == 0 and output["elements"] == 1 and output["differing"] == 1
    assert 0 < output["max_ulp"] < 1000  # a reduction order: a few ulp, not another value
    assert 0 < output["max_relative"] < 1e-4
    assert any(line.startswith("its magnitude, output 0: 1 of 1 elements differ")
               for line in finding_details(tool, record))


def finding_details(tool, record):
    done = tool("compare", record("one_again", 1), record("two_again", 2), "--align")
    return [line.strip() for line in done.stdout.splitlines()]


def test_one_thread_count_twice_parts_nowhere(tool, record):
    code, finding = alignment(tool, record("one", 1), record("one_again", 1))
    assert code == 0, finding["summary"]
    assert finding["data"]["parting"] is None


def test_outputs_not_kept_leave_the_magnitude_unmeasured(tool, record):
    a, b = record("one", 1), record("two", 2)
    os.remove(b.parent / "run-000" / "kept-outputs.bin")
    code, finding = alignment(tool, a, b)
    assert code == 1
    magnitude = finding["data"]["parting"]["magnitude"]
    assert "B did not keep the op's outputs" in magnitude["note"]
