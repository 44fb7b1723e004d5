"""The expectation is the audit's (docs/trace-format.md, the manifest's `expect`): the command
that made an audit folder and `repro-audit compare DIR` give the same exit code on it, for every
kind of audit (run, exec, sharded exec, --seeds both, --seeds different); runs that record no step
compare nothing (exit 5); runs of different lengths are told apart by their step counts.
The tool runs through conftest.py's `tool` (REPRO_AUDIT_BINARY names the built binary; CTest sets
it)."""
import json
import sys

import pytest

pytest.importorskip("torch")

# Seeded; RUN_NUDGES (a run number) nudges a weight after step 1 in that run, as a racing kernel
# would; STEPS_OF_RUN_1 gives run 1 another number of steps.
SCRIPT = r"""
import os, torch, repro_audit
repro_audit.seed_everything()
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
run = os.environ.get("REPRO_AUDIT_RUN")
steps = int(os.environ.get("STEPS", "4"))
if run == "1" and "STEPS_OF_RUN_1" in os.environ:
    steps = int(os.environ["STEPS_OF_RUN_1"])
data = torch.Generator().manual_seed(1)
with repro_audit.record(model, optimizer) as rec:
    for step in range(steps):
        x = torch.randn(8, 4, generator=data)
        optimizer.zero_grad()
        loss = model(x).square().mean()
        loss.backward()
        optimizer.step()
        if run == os.environ.get("RUN_NUDGES") and step == 1:
            with torch.no_grad():
                model[2].bias[0] += 1e-6
        rec.step(batch=(x,), loss=loss)
"""

TINY_SPEC = {
    "name": "tiny", "seed": 3, "device": "cpu", "threads": 1,
    "data": {"train": {"format": "random", "samples": 8, "shape": [1, 4, 4], "classes": 2},
             "batch_size": 4},
    "model": {"input": [1, 4, 4], "layers": [{"type": "flatten"}, {"type": "dense", "units": 2}]},
    "optimizer": {"type": "sgd", "lr": 0.1},
    "train": {"epochs": 1},
}


def compare_dir(tool, out, *more):
    return tool("compare", out, "--json", "-", *more)


def exec_command(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    return ["--", sys.executable, str(script)]


@pytest.mark.parametrize("seeds,nudge,expected", [
    ("same", None, 0), ("same", 1, 1), ("both", None, 0), ("both", 1, 1), ("different", None, 0),
])
def test_exec_and_compare_agree_on_the_folder(tool, tmp_path, seeds, nudge, expected):
    out = tmp_path / "out"
    env = {"RUN_NUDGES": nudge} if nudge is not None else {}
    done = tool("exec", "--runs", 2, "--seeds", seeds, "--out", out, "--junit",
                tmp_path / "exec.xml", *exec_command(tmp_path), **env)
    assert done.returncode == expected, done.stderr
    again = compare_dir(tool, out, "--junit", tmp_path / "compare.xml")
    assert again.returncode == expected, again.stderr
    report = json.loads(again.stdout)
    assert report["verdict"]["expect_identical"] is True
    if expected == 1:  # the JUnit of compare fails too: no yellow banner over a divergence
        assert 'failures="0"' not in (tmp_path / "compare.xml").read_text()
    if seeds == "different":
        assert report["statistics"]["different"]["final_loss"]["n"] == 2
        assert "DIFFERENT SEEDS ONLY" in tool("compare", out).stdout


def test_a_sharded_exec_audit_fails_in_compare_as_in_exec(tool, tmp_path):
    out = tmp_path / "out"
    for shard in ("0/2", "1/2"):
        done = tool("exec", "--runs", 3, "--shard", shard, "--out", out,
                    *exec_command(tmp_path), RUN_NUDGES=1)
        assert done.returncode == 0, done.stderr
    report = compare_dir(tool, out)
    assert report.returncode == 1, report.stderr
    assert json.loads(report.stdout)["verdict"]["diverged"]


def test_the_expectation_of_run_is_the_folders(tool, tmp_path):
    spec = tmp_path / "tiny.json"
    nondeterministic = dict(TINY_SPEC, determinism={"mode": "nondeterministic"})
    spec.write_text(json.dumps(nondeterministic))
    fault = "run=1,step=0,tensor=dense_0.weight"
    for expect, expected in (("identical", 1), ("any", 0)):
        out = tmp_path / expect
        done = tool("run", spec, "--runs", 2, "--out", out, "--expect", expect,
                    "--inject-fault", fault)
        assert done.returncode == expected, done.stderr
        assert compare_dir(tool, out).returncode == expected
        assert json.loads((out / "audit.json").read_text())["expect"] == expect
        # --resume with another expectation is refused: it is decided once.
        other = "any" if expect == "identical" else "identical"
        resumed = tool("run", spec, "--runs", 2, "--out", out, "--resume", "--expect", other,
                       "--inject-fault", fault)
        assert resumed.returncode == 2
        assert "expectation (--expect)" in resumed.stderr


def test_runs_that_record_no_step_compare_nothing(tool, tmp_path):
    out = tmp_path / "out"
    done = tool("exec", "--runs", 2, "--out", out, *exec_command(tmp_path), STEPS=0)
    assert done.returncode == 5, done.stderr
    assert "NO STEP RECORDED" in done.stdout
    assert compare_dir(tool, out).returncode == 5


def test_runs_of_different_lengths_part_at_their_step_counts(tool, tmp_path):
    out = tmp_path / "out"
    done = tool("exec", "--runs", 2, "--out", out, "--json", "-", *exec_command(tmp_path),
                STEPS=6, STEPS_OF_RUN_1=5)
    assert done.returncode == 1, done.stderr
    first = json.loads(done.stdout)["first_divergence"]
    assert first["category"] == "steps" and first["step"] == 5
    assert first["detail"] == "run 1 ended after 5 steps, run 0 after 6"
    text = tool("compare", out)
    assert text.returncode == 1
    assert ("first divergence: the runs recorded different numbers of steps: run 1 ended after "
            "5 steps, run 0 after 6") in text.stdout


def test_run_seeds_different_reports_the_spread(tool, tmp_path):
    spec = tmp_path / "tiny.json"
    spec.write_text(json.dumps(TINY_SPEC))
    out = tmp_path / "out"
    done = tool("run", spec, "--runs", 2, "--seeds", "different", "--out", out, "--json", "-")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["verdict"]["nothing_compared"] is False
    assert report["statistics"]["different"]["final_loss"]["n"] == 2
    assert compare_dir(tool, out).returncode == 0
