"""`repro-audit doctor -- CMD` (docs/doctor.md) on real PyTorch runs: a script that never seeds
through repro_audit and adds rows with index_add_ is told both, with the determinism switch that
index_add_ needs on CUDA (exit 1, text and JSON); a seeded script of deterministic ops is clear
(exit 0). The tool runs through conftest.py's `tool` (REPRO_AUDIT_BINARY names the built
binary)."""
import json
import sys

import pytest

pytest.importorskip("torch")

SCRIPT = r"""
import os, torch, repro_audit
if os.environ.get("CLEAN"):
    repro_audit.seed_everything(default=1)
    if os.environ.get("RESEED"):
        torch.manual_seed(int(os.environ["RESEED"]))  # a seed written into the script
else:
    torch.manual_seed(1)
torch.set_num_threads(1)
model = torch.nn.Linear(4, 3)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
index = torch.tensor([0, 1, 0, 2, 1, 0, 2, 2])
with repro_audit.record(model, optimizer) as rec:
    for step in range(3):
        optimizer.zero_grad()
        x = torch.ones(8, 4) * (step + 1)
        out = model(x)
        if not os.environ.get("CLEAN"):
            out = torch.zeros(3, 3).index_add_(0, index, out)
        loss = out.square().mean()
        loss.backward()
        optimizer.step()
        rec.step(batch=(x,), loss=loss)
"""


def doctor(tool, tmp_path, *options, out="out", **env_extra):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    return tool("doctor", "--out", tmp_path / out, *options, "--", sys.executable, script,
                **env_extra)


def test_doctor_names_each_obstacle_with_its_fix(tool, tmp_path):
    done = doctor(tool, tmp_path, "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["clear"] is False and report["device"] == "cpu"
    assert report["steps"] == 3 and report["steps_with_ops"] == 2
    assert [f["kind"] for f in report["findings"]] == ["seeds", "switch", "op"]
    op = report["findings"][2]
    assert op["what"].startswith("aten.index_add_.default")
    assert "identical on the CPU, where this run ran, but not on a GPU" in op["what"]
    text = doctor(tool, tmp_path, out="again").stdout
    assert "3 obstacles to identical runs (exit 1):" in text
    assert "fix: call repro_audit.seed_everything(default=args.seed)" in text


def test_doctor_is_clear_for_a_seeded_deterministic_script(tool, tmp_path):
    done = doctor(tool, tmp_path, CLEAN="1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "NOTHING IN THE WAY of identical runs" in done.stdout


def test_doctor_sees_a_reseed_with_the_commonest_seed(tool, tmp_path):
    """A script that seeds again with torch.manual_seed(42) after seed_everything: doctor's own
    seed was 42, so the reseed left torch where it was and doctor said "nothing in the way"
    (issue 61). Its default seed is one no script writes."""
    done = doctor(tool, tmp_path, "--json", CLEAN="1", RESEED="42")
    assert done.returncode == 1, done.stdout + done.stderr
    findings = json.loads(done.stdout)["findings"]
    assert [f["kind"] for f in findings] == ["seeds"]
    assert "torch was seeded again after seed_everything" in findings[0]["what"]


SPAWNED = r"""
import torch, torch.multiprocessing as mp, repro_audit

def worker(rank):
    # The parent seeded itself; this worker, a process of its own, does not (issue 61: the
    # pytorch/examples imagenet script's mp.spawn workers).
    torch.set_num_threads(1)
    model = torch.nn.Linear(4, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with repro_audit.record(model, optimizer) as rec:
        for step in range(2):
            optimizer.zero_grad()
            x = torch.ones(8, 4)
            loss = model(x).square().mean()
            loss.backward()
            optimizer.step()
            rec.step(batch=(x,), loss=loss)

if __name__ == "__main__":
    repro_audit.seed_everything(default=1)
    mp.spawn(worker, nprocs=1)
"""


def test_an_mp_spawn_worker_that_does_not_seed_is_named(tool, tmp_path):
    script = tmp_path / "spawned.py"
    script.write_text(SPAWNED)
    done = tool("doctor", "--out", tmp_path / "out", "--json", "--", sys.executable, script,
                timeout=300)
    assert done.returncode == 1, done.stderr
    seeds = [f for f in json.loads(done.stdout)["findings"] if f["kind"] == "seeds"]
    assert len(seeds) == 1
    assert "worker process" in seeds[0]["what"] and "mp.spawn" in seeds[0]["what"]
    assert "at the start of the worker function" in seeds[0]["fix"]
