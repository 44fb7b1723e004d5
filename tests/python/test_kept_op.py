"""One op kept whole and replayed (lib/python/repro_audit/kept_op.py, replay.py): with a keep
request the recorder keeps that op's outputs whatever the budget of kept outputs, captures its
call with its inputs as they were before it ran (an in-place op writes them), and a fresh process
replays it on those inputs with the run's switches: one distinct output, the run's, for a
deterministic op; the replay's count and whether it matched reach `repro-audit compare`'s JSON.
The tool runs through conftest.py's `tool`, the replay in its audit_environment."""
import hashlib
import json
import math
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
from repro_audit import kept_op, op_records, replay  # noqa: E402  (PYTHONPATH=lib/python)
from repro_audit.settings import Settings  # noqa: E402


def test_a_keep_request_is_two_integers():
    assert kept_op.parse("3:187") == (3, 187)
    for bad in ("3", "a:1", "-1:2", "1:2:3", "", "1" * 19 + ":0"):
        with pytest.raises(ValueError, match="REPRO_AUDIT_KEEP_OP"):
            kept_op.parse(bad)
    trace = {"REPRO_AUDIT_TRACE": "run-000.trace.jsonl"}  # the variables of a run of an audit
    assert Settings.from_environment(trace).replays == kept_op.DEFAULT_REPLAYS
    assert Settings.from_environment(dict(trace, REPRO_AUDIT_KEEP_OP="3:187")).keep_op == (3, 187)
    for bad in ("0", "1001", "x", "-3"):
        with pytest.raises(ValueError, match="REPRO_AUDIT_REPLAYS"):
            Settings.from_environment(dict(trace, REPRO_AUDIT_REPLAYS=bad))


def record_one_step(tmp_path, keep_op, budget):
    """One step of a linear layer and an in-place op, recorded with a keep request."""
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 4)
    recording = op_records.OpRecording(torch, model, None, (0, 1), keep_bytes=budget,
                                       keep_op=keep_op, run_folder=str(tmp_path))
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
    with open(recording.kept_op_path, "rb") as f:
        call, tensors = kept_op.load(torch, f.read())  # weights_only: tensors and text
    assert call["op"] == "aten.mul_.Tensor" and (call["step"], call["index"]) == (0, index)
    assert call["recorded_outputs"] == records[index]["out"]
    assert call["args"][0] == {"tensor": 0, "device": "cpu"}
    before = tensors[0]
    (_, kept_bytes), = recording.kept.entries[0][2]
    after = torch.frombuffer(bytearray(kept_bytes), dtype=torch.float32)
    assert torch.equal(before.reshape(-1) * 3.0, after)  # the input as it was, the output after


def test_a_replay_in_a_fresh_process_counts_distinct_outputs(tmp_path, audit_environment,
                                                             replay_process):
    _, records, _ = record_one_step(tmp_path, None, 0)
    index = [r["op"] for r in records].index("aten.sum.default")
    recording, _, _ = record_one_step(tmp_path, (0, index), 0)
    out = tmp_path / "replay.json"
    subprocess.run([sys.executable, "-m", "repro_audit.replay", recording.kept_op_path,
                    "--sha256", recording.kept_op_sha256, "--times", "5", "--out", str(out)],
                   check=True, env=audit_environment())
    result = json.loads(out.read_text())
    assert (result["op"], result["step"], result["index"]) == ("aten.sum.default", 0, index)
    assert result["times"] == 5 and result["distinct_outputs"] == 1 and result["matches_run"]
    # A file that is no kept op, with its own digest: exit 2, nothing written.
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a pickle")
    done = replay_process(junk, hashlib.sha256(b"not a pickle").hexdigest(), tmp_path / "none.json")
    assert done.returncode == 2 and "not a kept op" in done.stderr
    assert not (tmp_path / "none.json").exists()


@pytest.fixture
def replay_process(audit_environment):
    """Replays a kept op twice in a fresh process: its CompletedProcess, output captured."""
    def replay(kept, sha256, out):
        return subprocess.run([sys.executable, "-m", "repro_audit.replay", str(kept), "--sha256",
                               sha256, "--times", "2", "--out", str(out)],
                              env=audit_environment(), capture_output=True, text=True)
    return replay


class Payload:
    """What someone who can write into the audit folder could put in kept-op.pt: unpickled, it
    calls open(marker, "w")."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_a_crafted_pickle_in_place_of_the_kept_op_is_refused_unloaded(tmp_path, replay_process):
    _, records, _ = record_one_step(tmp_path, None, 0)
    index = [r["op"] for r in records].index("aten.sum.default")
    recording, _, _ = record_one_step(tmp_path, (0, index), 0)
    marker = tmp_path / "marker"
    torch.save(Payload(str(marker)), recording.kept_op_path)  # over the recorder's file
    done = replay_process(recording.kept_op_path, recording.kept_op_sha256, tmp_path / "r.json")
    assert done.returncode == 2, done.stderr
    assert "%s: refused, not loaded" % recording.kept_op_path in done.stderr
    assert not marker.exists() and not (tmp_path / "r.json").exists()
    # Even with the crafted file's own digest (were the recorder's ever taken from it), the load
    # is weights_only: the payload is not called.
    with open(recording.kept_op_path, "rb") as f:
        crafted = hashlib.sha256(f.read()).hexdigest()
    done = replay_process(recording.kept_op_path, crafted, tmp_path / "r.json")
    assert done.returncode == 2 and "not a kept op" in done.stderr, done.stderr
    assert not marker.exists() and not (tmp_path / "r.json").exists()


def test_kept_arguments_round_trip_without_pickling():
    tensors = []
    values = [None, True, 3, -2**70, "mean", 1.5, -0.0, float("inf"), float("nan"), 2 + 3j,
              (1, [2.0, (3,)]), {"dim": [0, 1]}, torch.float16, torch.bool, torch.device("cpu"),
              torch.strided, torch.channels_last, torch.Size([2, 3]),
              torch.tensor(2.5), torch.zeros(0, 3), torch.arange(6.0).reshape(2, 3).t()]
    values += [torch.ones(2, dtype=d) for d in (torch.bool, torch.uint8, torch.int8, torch.int32,
                                                torch.int64, torch.float16, torch.bfloat16,
                                                torch.float64, torch.complex64)]
    encoded = json.loads(json.dumps(kept_op.encode(torch, values, tensors)))  # JSON, strictly
    back = kept_op.decode(torch, encoded, lambda i, device: tensors[i].to(device))
    for a, b in zip(values, back):
        if isinstance(a, torch.Tensor):
            assert a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride()
            assert torch.equal(a, b)
        elif isinstance(a, float) and a != a:
            assert b != b
        elif isinstance(a, torch.Size):  # a tuple, as aten takes it
            assert type(b) is tuple and b == tuple(a)
        else:
            assert type(a) is type(b) and str(a) == str(b)
    assert math.copysign(1.0, back[6]) == -1.0
    with pytest.raises(kept_op.Unstorable, match="torch._C.Generator"):
        kept_op.encode(torch, [torch.Generator()], [])
    for bad in ({"dtype": "torch.manual_seed"}, {"eval": "x"}, {"float": 1}, {"tensor": "0"}):
        with pytest.raises(ValueError):
            kept_op.decode(torch, bad, lambda i, device: None)


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


def test_exec_keep_op_gives_the_magnitude_and_a_replay_that_names_a_setting(tool, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(THREADS_SUM)

    def audit(out, *options):
        done = tool("exec", "--runs", 2, "--out", tmp_path / out, "--expect", "any", "--json",
                    "-", *options, "--", sys.executable, script, REPRO_AUDIT_REPLAYS=4)
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


# The same script, but the run's own folder is written by someone else while it trains: after
# step 0 (its kept op written), kept-op.pt is replaced by a pickle whose unpickling creates a
# marker file.
TAMPERED = THREADS_SUM + r"""
    if rec._records.step_count == 1:
        import pathlib
        class Payload:
            def __reduce__(self):
                return (open, (os.environ["MARKER"], "w"))
        kept = pathlib.Path(os.environ["REPRO_AUDIT_TRACE"][:-len(".trace.jsonl")]) / "kept-op.pt"
        assert kept.is_file()
        torch.save(Payload(), str(kept))
"""


def test_exec_refuses_to_load_a_kept_op_changed_after_the_run_wrote_it(tool, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(TAMPERED)
    marker = tmp_path / "marker"
    done = tool("exec", "--runs", 2, "--out", tmp_path / "out", "--expect", "any", "--json", "-",
                "--keep-op", "0:0", "--", sys.executable, script, REPRO_AUDIT_REPLAYS=2,
                MARKER=marker)
    assert not marker.exists(), "the replay unpickled the crafted kept-op.pt"
    assert done.returncode == 0, done.stderr
    for run in (0, 1):
        with open(tmp_path / "out" / ("run-%03d.trace.jsonl" % run)) as f:
            environment = json.loads(f.readline())["environment"]
        kept = str(tmp_path / "out" / ("run-%03d" % run) / "kept-op.pt")
        assert environment["kept_op"].startswith(
            "replay refused: repro_audit.replay: %s: refused, not loaded" % kept)
        assert not (tmp_path / "out" / ("run-%03d" % run) / "replay.json").exists()


def test_exec_refuses_a_keep_request_outside_the_op_window(tool, tmp_path):
    for options, message in ((["--keep-op", "3"], "expected STEP:INDEX"),
                             (["--keep-op", "3:1", "--trace-ops", "0:2"], "outside --trace-ops")):
        done = tool("exec", "--out", tmp_path / "x", *options, "--", sys.executable, "-c", "pass")
        assert done.returncode == 2 and message in done.stderr, done.stderr
