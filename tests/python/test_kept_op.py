"""One op kept whole and replayed (lib/python/repro_audit/kept_op.py, replay.py): with a keep
request the recorder keeps that op's outputs whatever the budget of kept outputs, captures its
call with its inputs as they were before it ran (an in-place op writes them), and a fresh process
replays it on those inputs with the run's switches: one distinct output, the run's, for a
deterministic op; the replay's count and whether it matched reach `repro-audit compare`'s JSON."""
import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
from repro_audit import kept_op, ops, replay  # noqa: E402  (PYTHONPATH=lib/python)


def test_a_keep_request_is_two_integers():
    assert kept_op.parse("3:187") == (3, 187)
    for bad in ("3", "a:1", "-1:2", "1:2:3", "", "1" * 19 + ":0"):
        with pytest.raises(ValueError, match="REPRO_AUDIT_KEEP_OP"):
            kept_op.parse(bad)
    assert kept_op.replays_from({}) == kept_op.DEFAULT_REPLAYS
    for bad in ("0", "1001", "x", "-3"):
        with pytest.raises(ValueError, match="REPRO_AUDIT_REPLAYS"):
            kept_op.replays_from({"REPRO_AUDIT_REPLAYS": bad})


def record_one_step(tmp_path, keep_op, budget):
    """One step of a linear layer and an in-place op, recorded with a keep request."""
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 4)
    recording = ops.OpRecording(torch, model, None, (0, 1), keep_bytes=budget, keep_op=keep_op,
                                run_folder=str(tmp_path))
    recording.begin(0)
    x = torch.randn(16, 8)
    y = model(x)
    y.mul_(3.0)  # writes its input: the kept call must hold the values before it ran
    total = y.sum()
    records = recording.end()
    return recording, records, total


def test_the_kept_op_is_kept_whatever_the_budget_with_its_inputs_before_it_ran(tmp_path):
    _, records, _ = record_one_step(tmp_path, None, 0)
    names = [r["op"] for r in records]
    index = names.index("aten.mul_.Tensor")
    recording, records, _ = record_one_step(tmp_path, (0, index), 0)  # a budget of 0 bytes
    assert [(s, i) for s, i, _ in recording.kept.entries] == [(0, index)]
    kept = torch.load(recording.kept_op_path, weights_only=False)
    assert kept["op"] == "aten.mul_.Tensor" and (kept["step"], kept["index"]) == (0, index)
    assert kept["recorded_outputs"] == records[index]["out"]
    before = kept["args"][0]["__tensor__"]
    (_, kept_bytes), = recording.kept.entries[0][2]
    after = torch.frombuffer(bytearray(kept_bytes), dtype=torch.float32)
    assert torch.equal(before.reshape(-1) * 3.0, after)  # the input as it was, the output after


def test_a_replay_in_a_fresh_process_counts_distinct_outputs(tmp_path):
    _, records, _ = record_one_step(tmp_path, None, 0)
    index = [r["op"] for r in records].index("aten.sum.default")
    recording, _, _ = record_one_step(tmp_path, (0, index), 0)
    out = tmp_path / "replay.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    subprocess.run([sys.executable, "-m", "repro_audit.replay", recording.kept_op_path,
                    "--times", "5", "--out", str(out)], check=True, env=env)
    result = json.loads(out.read_text())
    assert (result["op"], result["step"], result["index"]) == ("aten.sum.default", 0, index)
    assert result["times"] == 5 and result["distinct_outputs"] == 1 and result["matches_run"]
    # A file that is no kept op: exit 2, nothing written.
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a pickle")
    done = subprocess.run([sys.executable, "-m", "repro_audit.replay", str(junk), "--out",
                           str(tmp_path / "none.json")], env=env, capture_output=True, text=True)
    assert done.returncode == 2 and "not a kept op" in done.stderr
    assert not (tmp_path / "none.json").exists()


def test_the_replay_resolves_aten_names():
    assert replay.resolve_op(torch, "aten.sum.default") is torch.ops.aten.sum.default
    assert replay.resolve_op(torch, "aten.mul_.Tensor") is torch.ops.aten.mul_.Tensor


# A script whose one run-dependent op is a sum that one thread and two threads compute to bits one
# ULP apart on every machine (the table of tests/python/scripts/one_op_depends_on_run.py, whose
# docstring has the arithmetic): run 0 sums with one thread, run 1 with two.
THREADS_SUM = r"""
import os, torch, repro_audit
torch.set_num_threads(1 + int(os.environ.get("REPRO_AUDIT_RUN", "0")) % 2)
table = torch.zeros(65536)
table[0], table[32768], table[32769] = 1.0, 2.0**-24, 2.0**-24
class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 1)
    def forward(self, x):
        return self.lin(x) * table.sum()
torch.manual_seed(0)
model = Scaled()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
rec = repro_audit.Recorder.from_env(model, optimizer)
x = torch.ones(8, 4)
for _ in range(2):
    optimizer.zero_grad()
    loss = model(x).square().mean()
    loss.backward()
    optimizer.step()
    rec.step(batch=(x,), loss=loss)
"""


def test_exec_keep_op_gives_the_magnitude_and_a_replay_that_names_a_setting(tmp_path):
    binary = os.environ.get("REPRO_AUDIT_BINARY", "")
    if not binary or not os.access(binary, os.X_OK):
        pytest.fail("REPRO_AUDIT_BINARY does not name the built repro-audit binary")
    script = tmp_path / "train.py"
    script.write_text(THREADS_SUM)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), REPRO_AUDIT_REPLAYS="4")

    def audit(out, *options):
        done = subprocess.run([binary, "exec", "--runs", "2", "--out", str(tmp_path / out),
                               "--expect", "any", "--json", "-", *options, "--",
                               sys.executable, str(script)],
                              capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    first = audit("ops", "--trace-ops", "0:1")
    (cause,) = [c for c in first["root_causes"] if c["kind"] == "op"]
    assert cause["op"] == "aten.sum.default" and cause["step"] == 0
    assert cause["magnitude"]["kept_replays"] == []
    kept = audit("kept", "--keep-op", "0:%d" % cause["record"])
    (cause,) = [c for c in kept["root_causes"] if c["kind"] == "op"]
    magnitude = cause["magnitude"]
    (run,) = magnitude["runs"]
    assert run["outputs"][0]["differing"] == 1 and run["outputs"][0]["max_ulp"] == 1
    # Each run's sum replayed with its own thread count gives its own bits, every time: the
    # runs differ by a setting (the threads), not by a nondeterministic kernel.
    assert magnitude["kept_replays"] == [
        {"run": 0, "times": 4, "distinct_outputs": 1, "matches_run": True},
        {"run": 1, "times": 4, "distinct_outputs": 1, "matches_run": True}]
    assert (tmp_path / "kept" / "run-001" / "kept-op.pt").is_file()


def test_exec_refuses_a_keep_request_outside_the_op_window(tmp_path):
    binary = os.environ.get("REPRO_AUDIT_BINARY", "")
    if not binary or not os.access(binary, os.X_OK):
        pytest.fail("REPRO_AUDIT_BINARY does not name the built repro-audit binary")
    for options, message in ((["--keep-op", "3"], "expected STEP:INDEX"),
                             (["--keep-op", "3:1", "--trace-ops", "0:2"], "outside --trace-ops")):
        done = subprocess.run([binary, "exec", "--out", str(tmp_path / "x"), *options, "--",
                               sys.executable, "-c", "pass"], capture_output=True, text=True)
        assert done.returncode == 2 and message in done.stderr, done.stderr
