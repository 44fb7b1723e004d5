"""Misuse the recorder catches (lib/python/repro_audit/misuse.py, docs/pytorch.md "Misuse the
recorder catches") and seeds checked (docs/pytorch.md "Seeds"): rec.step() before
optimizer.step() is a warning in the trace and in the report; a second close() or finish() is a
no-op with a Python warning, with an audit or without; `--seeds both` runs whose different seeds
never reached the random states are a warning naming seed_everything(default=args.seed), with the
cause told from seed_everything's record. The tool runs through conftest.py's `tool`
(REPRO_AUDIT_BINARY names the built binary)."""
import json
import subprocess
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")
import repro_audit  # noqa: E402  (PYTHONPATH=lib/python)
from repro_audit import misuse  # noqa: E402

# SEEDING: how the script seeds; ORDER "late": rec.step() before optimizer.step().
SCRIPT = r"""
import os, torch, repro_audit
SEEDING
torch.set_num_threads(1)
model = torch.nn.Linear(4, 3)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.ones(8, 4), torch.arange(8) % 3
with repro_audit.record(model, optimizer) as rec:
    for step in range(3):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        if os.environ.get("ORDER") == "late":
            rec.step(batch=(x, y), loss=loss)
            optimizer.step()
        else:
            optimizer.step()
            rec.step(batch=(x, y), loss=loss)
"""


def write_script(tmp_path, seeding="repro_audit.seed_everything(default=1)"):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.replace("SEEDING", seeding))
    return script


@pytest.fixture
def recorded_run(tmp_path, audit_environment):
    """Runs the script as run `run` of an audit, outside exec, the keywords in its environment:
    (the path of its trace, its stderr)."""
    def run_it(run, **env_extra):
        script = write_script(tmp_path)
        trace = tmp_path / f"run-{run:03d}.trace.jsonl"
        env = audit_environment(REPRO_AUDIT_TRACE=trace, REPRO_AUDIT_RUN=run, **env_extra)
        done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                              text=True)
        assert done.returncode == 0, done.stderr
        return trace, done.stderr
    return run_it


def header(trace):
    return json.loads(trace.read_text().splitlines()[0])


def test_step_before_the_optimizer_is_a_warning_in_the_trace_and_the_report(tool, recorded_run):
    traces = []
    for run in range(2):
        trace, stderr = recorded_run(run, ORDER="late")
        assert "RuntimeWarning: repro_audit: rec.step() at step 0" in stderr
        assert header(trace)["recorder_warnings"] == [misuse.STEP_BEFORE_OPTIMIZER]
        traces.append(str(trace))
    done = tool("compare", *traces)
    assert done.returncode == 0, done.stderr
    assert ("WARNING: runs 0, 1: rec.step() at step 0 found the weights unchanged since the "
            "start although gradients exist: is rec.step() called before optimizer.step()?"
            in done.stdout)
    report = json.loads(tool("compare", "--json", "-", *traces).stdout)
    assert any("before optimizer.step()" in w for w in report["warnings"])


def test_step_after_the_optimizer_warns_of_nothing(recorded_run):
    trace, stderr = recorded_run(0)
    assert "RuntimeWarning" not in stderr
    assert "recorder_warnings" not in header(trace)


def test_a_second_close_is_a_no_op_with_a_warning(tmp_path):
    model = torch.nn.Linear(2, 2)
    trace = tmp_path / "run-000.trace.jsonl"
    rec = repro_audit.Recorder(model, None, str(trace))
    rec.step(loss=1.0)
    rec.close()
    written = trace.read_text()
    with pytest.warns(RuntimeWarning, match="after the run ended"):
        rec.finish()
    assert trace.read_text() == written
    # Leaving a `with` block after an explicit close() is no misuse: quiet.
    trace.unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with repro_audit.Recorder(model, None, str(trace)) as rec:
            rec.step(loss=1.0)
            rec.close()
    # Without an audit the recorder does nothing, and still says so.
    quiet = repro_audit.NoOpRecorder()
    quiet.close()
    with pytest.warns(RuntimeWarning, match="after the run ended"):
        quiet.close()


def seeds_both(tool, tmp_path, seeding):
    """An exec --seeds both audit of one same-seed and one different-seed run: its JSON report."""
    script = write_script(tmp_path, seeding)
    done = tool("exec", "--runs", 1, "--seeds", "both", "--allow-empty", "--out",
                tmp_path / "out", "--json", "-", "--", sys.executable, script)
    assert done.returncode == 0, done.stderr
    return [w for w in json.loads(done.stdout)["warnings"] if "different seeds" in w]


def test_seeds_overridden_after_seed_everything_are_a_warning(tool, tmp_path):
    (warning,) = seeds_both(tool, tmp_path, "repro_audit.seed_everything(default=1)\n"
                                            "torch.manual_seed(1)")
    assert "runs given different seeds start from the same random state (torch)" in warning
    assert ("seed_everything applied each run's seed, and the script seeded torch again after it"
            in warning)
    assert "torch.initial_seed() is 1, not " in warning
    assert "repro_audit.seed_everything(default=args.seed)" in warning


def test_a_seed_given_to_seed_everything_overrides_the_audits(tool, tmp_path):
    (warning,) = seeds_both(tool, tmp_path, "repro_audit.seed_everything(1)")
    assert "same random state (numpy, python_random, torch)" in warning
    assert "seed_everything was given the same seed in every run" in warning


def test_seeds_applied_are_no_warning(tool, tmp_path):
    assert seeds_both(tool, tmp_path, "repro_audit.seed_everything(default=1)") == []
