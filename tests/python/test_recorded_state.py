"""What the recorder sees (docs/pytorch.md "What is recorded"): buffers (BatchNorm's running
statistics, num_batches_tracked) are a category of their own, so two runs whose models differ only
at evaluation time are not identical; all optimizer state is recorded (a 0-dim step, LBFGS's
lists); mixed-precision parameters are recorded. The tool runs through conftest.py's `tool`
(REPRO_AUDIT_BINARY names the built binary)."""
import json
import sys

import pytest

pytest.importorskip("torch")

# CHANGE (in run 1 only) says what differs: "running_mean" (a BatchNorm statistic after step 1),
# "batches_tracked", "lbfgs_history" (a value in LBFGS's history list), "adam_step" (Adam's 0-dim
# step count), "bf16" (a bf16 parameter).
SCRIPT = r"""
import os, torch, repro_audit
repro_audit.seed_everything()
torch.set_num_threads(1)
change = os.environ.get("CHANGE") if os.environ.get("REPRO_AUDIT_RUN") == "1" else None
model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 2))
model.register_parameter("scale", torch.nn.Parameter(torch.ones(2, dtype=torch.bfloat16),
                                                     requires_grad=False))
lbfgs = os.environ.get("OPTIMIZER") == "lbfgs"
trained = [p for p in model.parameters() if p.requires_grad]
optimizer = (torch.optim.LBFGS(trained, history_size=3, max_iter=2) if lbfgs
             else torch.optim.Adam(trained, lr=0.01))
data = torch.Generator().manual_seed(1)
with repro_audit.record(model, optimizer) as rec:
    for step in range(3):
        x = torch.randn(8, 4, generator=data)
        def closure():
            optimizer.zero_grad()
            loss = model(x).square().mean()
            loss.backward()
            return loss
        loss = optimizer.step(closure) if lbfgs else None
        if loss is None:
            loss = closure()
            optimizer.step()
        if step == 1 and change:
            with torch.no_grad():
                if change == "running_mean":
                    model[1].running_mean[0] += 1e-6
                elif change == "batches_tracked":
                    model[1].num_batches_tracked += 1
                elif change == "lbfgs_history":
                    optimizer.state[model[0].weight]["old_dirs"][0][0] += 1e-6
                elif change == "adam_step":
                    optimizer.state[model[0].weight]["step"] += 1
                elif change == "bf16":
                    model.scale[0] = 2.0
        rec.step(batch=(x,), loss=loss)
"""


def audit(tool, tmp_path, **env):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    done = tool("exec", "--runs", 2, "--out", tmp_path / "out", "--json", "-", "--",
                sys.executable, script, **env)
    return done, json.loads(done.stdout) if done.stdout else None


@pytest.mark.parametrize("change,category,tensor", [
    ("running_mean", "buffers", "1.running_mean"),
    ("batches_tracked", "buffers", "1.num_batches_tracked"),
    ("adam_step", "optimizer_state", "optimizer_state"),
    ("bf16", "weights", "scale"),
])
def test_a_difference_in_any_state_is_found_where_it_is(tool, tmp_path, change, category, tensor):
    done, report = audit(tool, tmp_path, CHANGE=change)
    assert done.returncode == 1, done.stderr
    first = report["first_divergence"]
    assert (first["category"], first["step"], first["tensor"]) == (category, 1, tensor)
    assert report["categories"]["buffers"]["identical"] == (category != "buffers")


def test_lbfgs_history_is_recorded(tool, tmp_path):
    done, report = audit(tool, tmp_path, CHANGE="lbfgs_history", OPTIMIZER="lbfgs")
    assert done.returncode == 1, done.stderr
    assert report["first_divergence"]["category"] == "optimizer_state"
    header = json.loads((tmp_path / "out" / "run-000.trace.jsonl").read_text().splitlines()[0])
    assert "old_dirs:0.weight" in header["optimizer_state"]


def test_runs_alike_in_every_state_are_identical(tool, tmp_path):
    done, report = audit(tool, tmp_path)
    assert done.returncode == 0, done.stderr
    assert report["categories"]["buffers"]["identical"]
    header = json.loads((tmp_path / "out" / "run-000.trace.jsonl").read_text().splitlines()[0])
    assert {"name": "scale", "shape": [2], "dtype": "bf16"} in header["params"]
    assert "step:0.weight" in header["optimizer_state"]
