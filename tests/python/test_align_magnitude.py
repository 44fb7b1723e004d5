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


def record_with_control(tool, tmp_path, name, threads):
    """The program with --seeds all: its run 0 and its perturbed run (the alignment's control)."""
    out = tmp_path / name
    done = tool("exec", "--runs", "1", "--seeds", "all", "--allow-empty", "--trace-ops", "0",
                "--out", out, "--", sys.executable, SCRIPT, threads)
    assert done.returncode == 0, done.stderr
    return out / "run-000.trace.jsonl", out / "run-002.trace.jsonl"


def test_the_control_a_perturbed_run_of_a_must_part_from_it(tool, tmp_path, record):
    # Issue 63: a passing alignment is a verdict of identity, which holds only when a control that
    # should fail is seen to fail (DESIGN.md). A's perturbed run, aligned with A, parts at the
    # first op reading its flipped weight.
    a, control = record_with_control(tool, tmp_path, "a", 1)
    code, finding = alignment_with(tool, a, record("one_again", 1), control)
    assert code == 0, finding["summary"]
    assert finding["outcome"] == "passed"
    assert finding["data"]["control"]["parted"] is True
    assert finding["data"]["control"]["step"] == 0
    # Without it, the pass says there was no control.
    done = tool("compare", a, record("one_more", 1), "--align")
    assert done.returncode == 0 and "no control:" in done.stdout


def test_a_control_that_does_not_part_leaves_the_alignment_inconclusive(tool, tmp_path, record):
    # A perturbed run whose flip did not reach a recorded op is stood in for by A's own trace
    # under a perturbed run's header: nothing parts, so "every op agreed" proves nothing.
    a, control = record_with_control(tool, tmp_path, "a", 1)
    lines = a.read_text().splitlines()
    header = json.loads(lines[0])
    header.update(seed_group="perturbed",
                  perturbation=json.loads(control.read_text().splitlines()[0])["perturbation"])
    fake = tmp_path / "fake.trace.jsonl"
    fake.write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n")
    code, finding = alignment_with(tool, a, record("one_again", 1), fake)
    assert code == 6
    assert finding["outcome"] == "inconclusive"
    assert finding["data"]["control"]["parted"] is False


def test_a_third_trace_that_is_no_perturbed_run_of_a_is_refused(tool, record):
    a, b = record("one", 1), record("two", 2)
    done = tool("compare", a, b, record("again", 1), "--align")
    assert done.returncode == 2
    assert "the third trace of --align is the control" in done.stderr


def alignment_with(tool, *traces):
    done = tool("compare", *traces, "--align", "--json", "-")
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)["findings"]["op_alignment"]
