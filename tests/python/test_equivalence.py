"""Two programs judged against a measured floor (`repro-audit compare A B FLOOR... --expect
equivalent`, docs/equivalence.md "The floor"), issue 63's worked case (a) on the CPU: gradient
accumulation over 4 micro-batches of 16 against the full batch of 64 (scripts/grad_accumulation.py).
The floor is A's perturbed run (exec --seeds all: one bit of one initial weight flipped). The
accumulation that takes each micro-batch's mean over its own padded tokens is beyond the floor
from step 0; its fix, normalised over the whole batch's tokens, is within it: each is the other's
control. A floor that cannot be measured is refused with exit 2."""
import json
import os
import sys

import pytest

pytest.importorskip("torch")

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts",
                      "grad_accumulation.py")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tool):
    """A (the full batch) with its perturbed run, and the two accumulations: their traces."""
    folder = tmp_path_factory.mktemp("equivalence")

    def record(name, variant, *options):
        done = tool("exec", "--runs", 1, "--allow-empty", "--out", folder / name, *options, "--",
                    sys.executable, SCRIPT, variant)
        assert done.returncode == 0, done.stderr
        return folder / name

    full = record("full", "full", "--seeds", "all")
    traces = {"a": full / "run-000.trace.jsonl", "floor": full / "run-002.trace.jsonl"}
    header = json.loads(traces["floor"].read_text().splitlines()[0])
    assert header["seed_group"] == "perturbed" and header["perturbation"], header
    for variant in ("buggy", "fixed"):
        traces[variant] = record(variant, variant) / "run-000.trace.jsonl"
    return traces


def equivalence(tool, tmp_path, runs, variant, *extra):
    html = tmp_path / f"{variant}.html"
    done = tool("compare", runs["a"], runs[variant], runs["floor"], "--expect", "equivalent",
                "--json", "-", "--html", html, *extra)
    report = json.loads(done.stdout)
    return done.returncode, report["findings"]["equivalence"], html.read_text()


def test_accumulation_with_a_per_micro_batch_mean_is_beyond_the_floor_from_step_0(
        tool, tmp_path, runs):
    code, finding, html = equivalence(tool, tmp_path, runs, "buggy")
    assert code == 1
    assert finding["outcome"] == "failed"
    data = finding["data"]
    assert data["beyond_from"] == 0
    assert data["ratio"] > 100, data
    assert data["floor_runs"] == [2] and data["a"] == 0 and data["b"] == 1
    assert "beyond the floor from step 0" in finding["summary"]
    # The curves in the JSON, and the plot of them in the HTML.
    assert len(data["distance"]) == len(data["floor"]) == len(data["steps"]) == 4
    assert data["distance"][0] > 100 * data["floor"][0]
    assert "B&#39;s distance from A against the floor" in html or \
        "B's distance from A against the floor" in html
    assert "<svg" in html


def test_accumulation_normalised_over_the_whole_batch_is_within_the_floor(tool, tmp_path, runs):
    # A margin of 100 floors: the fix's distance is the order of PyTorch's sums, a few ulp on this
    # machine (2x) and not promised on another CPU; the bug's is 10^4 floors.
    code, finding, _ = equivalence(tool, tmp_path, runs, "fixed", "--floor-margin", "100")
    assert code == 0, finding
    assert finding["outcome"] == "passed"
    assert finding["data"]["beyond_from"] is None
    assert finding["data"]["ratio"] <= finding["data"]["margin"]
    assert "within the floor through step 3" in finding["summary"]


def test_a_tighter_margin_is_honoured(tool, tmp_path, runs):
    # The fix's distance is a few units in the last place; a margin under its ratio calls it
    # beyond: the margin is an input of the verdict, not a constant.
    _, within, _ = equivalence(tool, tmp_path, runs, "fixed")
    ratio = within["data"]["ratio"]
    if ratio <= 0:
        pytest.skip("this machine's fixed accumulation matched the full batch to the bit")
    code, finding, _ = equivalence(tool, tmp_path, runs, "fixed", "--floor-margin",
                                   str(ratio / 2))
    assert code == 1 and finding["outcome"] == "failed"


def test_a_floor_that_cannot_be_measured_is_refused(tool, runs):
    done = tool("compare", runs["a"], runs["fixed"], "--expect", "equivalent")
    assert done.returncode == 2
    assert "needs a floor" in done.stderr
    done = tool("compare", runs["a"], runs["fixed"], runs["buggy"], "--expect", "equivalent")
    assert done.returncode == 2
    assert "cannot be a floor run of A" in done.stderr


def test_exec_versus_runs_both_programs_and_judges_b_against_the_floor(tool, tmp_path):
    # One command: A (the full batch) with --seeds all in OUT/a, B once in OUT/b, the report of B
    # against the floor of A's perturbed run.
    out = tmp_path / "versus"
    done = tool("exec", "--expect", "equivalent", "--versus",
                f"{sys.executable} {SCRIPT} buggy", "--runs", "1", "--out", out, "--json", "-",
                "--", sys.executable, SCRIPT, "full")
    assert done.returncode == 1, done.stderr
    finding = json.loads(done.stdout)["findings"]["equivalence"]
    assert finding["outcome"] == "failed" and finding["data"]["beyond_from"] == 0
    assert (out / "a" / "run-002.trace.jsonl").is_file()  # A's perturbed run: the floor
    assert (out / "b" / "run-000.trace.jsonl").is_file()
    assert finding["data"]["floor_runs"] == [2]
    # The parameters' values after steps 0, 1, 2 (of 4), written by each run: B's part from A's
    # beyond the floor after step 0 too.
    assert (out / "b" / "run-000" / "weights-step-2.safetensors").is_file()
    parameters = finding["data"]["parameters"]
    assert parameters["steps"] == [0, 1, 2] and parameters["tensors"] == 5
    assert parameters["beyond"]["step"] == 0 and parameters["beyond"]["ratio"] > 10


@pytest.mark.parametrize("options, message", [
    (["--versus", "python3 b.py"], "give --expect equivalent with it"),
    (["--expect", "equivalent"], "give program B with --versus"),
    (["--expect", "equivalent", "--versus", "python3 b.py", "--seeds", "all"],
     "--seeds does not apply to it"),
    (["--floor-margin", "3"], "--floor-margin is for --versus"),
])
def test_exec_versus_refuses_what_it_cannot_do_before_any_run(tool, tmp_path, options, message):
    out = tmp_path / "refused"
    done = tool("exec", *options, "--out", out, "--", sys.executable, SCRIPT, "full")
    assert done.returncode == 2
    assert message in done.stderr
    assert not out.exists()


DDP_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "ddp_train.py")


@pytest.mark.parametrize("perturb_at, beyond_from", [(None, None), (2, 3)])
def test_two_data_parallel_ranks_against_one_process_on_the_whole_batch(
        tool, tmp_path, perturb_at, beyond_from):
    # Issue 63's worked case (b): DDP on gloo over 2 ranks (the project's launcher), each on half
    # of the global batch, recording the global batch's loss, against one process on the whole
    # batch: the same training up to the order of the sums, within the floor. Its control: rank 1
    # adds 1e-3 to a gradient after the all-reduce of step 2, and B is beyond the floor from the
    # next step's loss.
    environment = {"GLOBAL_LOSS": 1, "STEPS": 8}
    if perturb_at is not None:
        environment["PERTURB_AT"] = perturb_at
    # A margin of 100 floors: the ranks' sums are PyTorch's and gloo's order, a few ulp here (2x),
    # not promised on another CPU; the control is beyond by about 500x.
    done = tool("exec", "--expect", "equivalent", "--floor-margin", "100", "--versus",
                f"{sys.executable} -m repro_audit.launch 2 {DDP_SCRIPT}", "--runs", "1",
                "--out", tmp_path / "ddp", "--json", "-", "--", sys.executable, DDP_SCRIPT,
                **environment)
    finding = json.loads(done.stdout)["findings"]["equivalence"]
    assert finding["data"]["beyond_from"] == beyond_from, finding["summary"]
    assert done.returncode == (0 if beyond_from is None else 1), done.stderr
    # The parameters after steps 0, 1, 2, 4 (rank 0's replica against the one process's).
    parameters = finding["data"]["parameters"]
    assert parameters["steps"] == [0, 1, 2, 4]
    assert (parameters["beyond"] is None) == (beyond_from is None), parameters


def test_the_next_step_beyond_the_floor_runs_and_aligns_the_two_programs(tool, tmp_path):
    # With op records in both programs, the finding's next step is `compare A B --align`: it must
    # be a command the tool accepts, and it names where the per-micro-batch mean parts.
    done = tool("exec", "--expect", "equivalent", "--trace-ops", "0", "--versus",
                f"{sys.executable} {SCRIPT} buggy", "--runs", "1", "--out", tmp_path / "ops",
                "--json", "-", "--", sys.executable, SCRIPT, "full")
    assert done.returncode == 1, done.stderr
    [next_step] = json.loads(done.stdout)["findings"]["equivalence"]["next_steps"]
    words = next_step.split()
    assert words[:2] == ["repro-audit", "compare"] and words[-1] == "--align", next_step
    aligned = tool(*words[1:], "--json", "-")
    assert aligned.returncode == 1, aligned.stderr
    assert json.loads(aligned.stdout)["findings"]["op_alignment"]["data"]["parting"] is not None
