"""Traces written while the run goes (docs/trace-format.md, "Streamed traces"): the PyTorch
recorder appends each record to "<trace>.tmp-<pid>-<n>" when it makes it and renames the file over
the trace at the end, so its memory and its cost per step do not grow with the run. The bytes under
the trace's name are those of the trace written whole; a header changed at the end is written
anew in front of the records; a killed run leaves its partial trace, which `repro-audit compare`
of the audit folder names with the steps it holds. The tool runs through conftest.py's `tool`
(REPRO_AUDIT_BINARY names the built binary)."""
import glob
import json
import os
import signal
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "lib", "python"))
from repro_audit.trace import TraceRecords  # noqa: E402

D = ["%032x" % n for n in range(16)]


def header():
    return {"record": "header", "format_version": 3, "ledger": [], "optimizer_state": []}


def records(path, epochs=(0, 0, 1, 3)):
    """Four steps (epochs 0, 0, 1 and 3: epoch 2 has none) through a TraceRecords."""
    r = TraceRecords(header(), [D[0]], [D[1]], path)
    for step, epoch in enumerate(epochs):
        r.add_step({"step": step, "epoch": epoch, "batch": 0, "loss_bits": "0x3f800000",
                    "loss": 1.0, "weights": [D[2 + step]], "buffers": [D[8 + step]],
                    "seconds": 0.5})
    return r


def test_a_streamed_trace_is_the_trace_written_whole(tmp_path):
    path = str(tmp_path / "run-000.trace.jsonl")
    streamed, whole = records(path), records(None)
    assert glob.glob(path + ".tmp-*") and not os.path.exists(path)  # written as it goes
    streamed.finish(2.0, 0.1)
    whole.finish(2.0, 0.1)
    with open(path, encoding="utf-8") as f:
        assert f.read() == whole.text()
    assert os.listdir(tmp_path) == ["run-000.trace.jsonl"]
    lines = [json.loads(line) for line in whole.text().splitlines()]
    assert [line["record"] for line in lines] == [
        "header", "init", "step", "step", "epoch", "step", "epoch", "epoch", "step", "epoch", "end"]
    assert lines[-1]["steps"] == 4 and lines[-1]["weights"] == [D[5]]


def test_a_header_changed_by_the_end_is_written_anew_in_front_of_the_records(tmp_path):
    path = str(tmp_path / "run-000.trace.jsonl")
    streamed, whole = records(path), records(None)
    for r in (streamed, whole):
        r.header["ledger"] = [{"layer": "conv", "direction": "forward"}]  # known at the end
        r.finish(2.0, 0.1)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    assert text == whole.text()
    assert json.loads(text.splitlines()[0])["ledger"] == [{"layer": "conv", "direction": "forward"}]
    assert os.listdir(tmp_path) == ["run-000.trace.jsonl"]


KILLED = r"""
import os, signal, torch, repro_audit
torch.manual_seed(0)
model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
rec = repro_audit.Recorder.from_env(model, optimizer)
for step in range(30):
    x = torch.randn(8, 4)
    optimizer.zero_grad()
    loss = model(x).square().mean()
    loss.backward()
    optimizer.step()
    rec.step(batch=(x,), loss=loss, epoch=step // 10)
    if step == 24 and not os.path.exists(os.environ["KILLED_ONCE"]):
        open(os.environ["KILLED_ONCE"], "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_run_leaves_a_partial_trace_that_compare_names_and_resume_reruns(tool,
                                                                                   tmp_path):
    pytest.importorskip("torch")
    script = tmp_path / "train.py"
    script.write_text(KILLED)
    out = tmp_path / "audit"
    killed_once = tmp_path / "killed"
    done = tool("exec", "--runs", 2, "--out", out, "--", sys.executable, script, timeout=300,
                KILLED_ONCE=killed_once)
    assert done.returncode != 0, done.stderr
    partial = glob.glob(str(out / "run-000.trace.jsonl.tmp-*"))
    assert len(partial) == 1, os.listdir(out)
    with open(partial[0], encoding="utf-8") as f:
        kinds = [json.loads(line)["record"] for line in f.read().splitlines()]
    # Every whole epoch reached the file (flushed at each epoch record): 20 steps at least.
    assert kinds[:2] == ["header", "init"] and kinds.count("step") >= 20
    assert "end" not in kinds
    compared = tool("compare", out, timeout=120)
    assert compared.returncode == 2  # no run of the audit has a whole trace
    assert "only the partial run-000.trace.jsonl.tmp-" in compared.stderr, compared.stderr
    assert "steps recorded, no end record" in compared.stderr, compared.stderr
    # exec --resume trains the killed run again (this time it runs through) and the other run.
    resumed = tool("exec", "--runs", 2, "--out", out, "--resume", "--", sys.executable, script,
                   timeout=300, KILLED_ONCE=killed_once)
    assert resumed.returncode == 0, resumed.stderr
    assert not glob.glob(str(out / "*.tmp-*"))
    for run in ("run-000", "run-001"):
        with open(out / (run + ".trace.jsonl"), encoding="utf-8") as f:
            assert json.loads(f.read().splitlines()[-1])["steps"] == 30
