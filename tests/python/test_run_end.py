"""The end of a run, stated (docs/pytorch.md "Failed runs"): a run's trace is whole only when the
script reached its end (the end of the `with repro_audit.record(...)` block, rec.close(), or a
normal exit); an exception writes an end record marked failed with the exception's type, and such
a trace is never compared as whole: compare names it, exec moves it out of the way and exits 3,
and exec --resume runs it again. A trace that cannot be written at exit makes the exit status
non-zero. The tool runs through conftest.py's `tool` (REPRO_AUDIT_BINARY names the built binary;
CTest sets it)."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")

# A seeded script of 6 steps; FAIL_AT (when set, and when the run is RUN_FAILS or any run when
# RUN_FAILS is unset) raises at that step; FORM chooses how the recorder is kept.
SCRIPT = r"""
import os, torch, repro_audit
repro_audit.seed_everything()
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 2))
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
fail_at = int(os.environ.get("FAIL_AT", "-1"))
fails = os.environ.get("RUN_FAILS") in (None, os.environ.get("REPRO_AUDIT_RUN"))
marker = os.environ.get("FAIL_ONCE")
if marker and os.path.exists(marker):
    fail_at = -1  # failed once already: this time it runs through
def train(rec):
    data = torch.Generator().manual_seed(1)
    for step in range(int(os.environ.get("STEPS", "6"))):
        x = torch.randn(8, 4, generator=data)
        optimizer.zero_grad()
        loss = model(x).square().mean()
        loss.backward()
        optimizer.step()
        rec.step(batch=(x,), loss=loss)
        if step == fail_at and fails:
            if marker:
                open(marker, "w").close()
            raise ZeroDivisionError("the run broke at step %d" % step)
form = os.environ.get("FORM", "with")
if form == "with":
    with repro_audit.record(model, optimizer) as rec:
        train(rec)
elif form == "close":
    rec = repro_audit.record(model, optimizer)
    train(rec)
    rec.close()
else:  # the recorder written at exit
    rec = repro_audit.Recorder.from_env(model, optimizer)
    train(rec)
"""


@pytest.fixture
def run_by_hand(tmp_path, audit_environment):
    """Runs SCRIPT as run `run` of an audit, outside exec: (its CompletedProcess, its trace)."""
    def run_script(run=0, seed=3, **extra):
        script = tmp_path / "train.py"
        script.write_text(SCRIPT)
        trace = tmp_path / f"run-{run:03d}.trace.jsonl"
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              env=audit_environment(REPRO_AUDIT_TRACE=trace, REPRO_AUDIT_RUN=run,
                                                    REPRO_AUDIT_SEED=seed, **extra))
        return done, trace
    return run_script


def end_record(trace):
    return json.loads(trace.read_text().splitlines()[-1])


@pytest.mark.parametrize("form", ["with", "close", "exit"])
def test_an_exception_writes_a_failed_end_record(run_by_hand, form):
    done, trace = run_by_hand(FORM=form, FAIL_AT=2)
    assert done.returncode != 0
    end = end_record(trace)
    assert end["status"] == "failed"
    assert end["error"] == "ZeroDivisionError"
    assert end["steps"] == 3


def test_sys_exit_0_in_the_block_is_a_normal_end_and_exit_1_a_failure(tmp_path,
                                                                      audit_environment):
    script = tmp_path / "stop.py"
    script.write_text("import sys, torch, repro_audit\nmodel = torch.nn.Linear(2, 2)\n"
                      "with repro_audit.record(model) as rec:\n"
                      "    rec.step(loss=1.0)\n    sys.exit(int(sys.argv[1]))\n")
    for code, status in ((0, "completed"), (1, "failed")):
        trace = tmp_path / f"run-00{code}.trace.jsonl"
        done = subprocess.run([sys.executable, str(script), str(code)], capture_output=True,
                              text=True, env=audit_environment(REPRO_AUDIT_TRACE=trace))
        assert done.returncode == code, done.stderr
        assert end_record(trace)["status"] == status
    assert end_record(tmp_path / "run-001.trace.jsonl")["error"] == "SystemExit"


@pytest.mark.parametrize("form", ["with", "close", "exit"])
def test_a_run_that_reaches_its_end_is_completed(run_by_hand, form):
    done, trace = run_by_hand(FORM=form)
    assert done.returncode == 0, done.stderr
    assert end_record(trace)["status"] == "completed"
    assert end_record(trace)["steps"] == 6


def test_compare_names_a_failed_trace_and_never_compares_it(tool, run_by_hand):
    good = run_by_hand(run=0)[1]
    failed = run_by_hand(run=1, FAIL_AT=2)[1]
    done = tool("compare", good, failed)
    assert done.returncode == 2
    assert "run-001.trace.jsonl: the run failed (ZeroDivisionError) after 3 steps" in done.stderr


def test_a_trace_that_cannot_be_written_at_exit_is_a_failing_exit(tmp_path, audit_environment):
    """The folder of the trace is gone when the run ends (the disk was cleaned, a full disk
    alike): the exit hook cannot write, and the exit status says so."""
    script = tmp_path / "train.py"
    folder = tmp_path / "traces"
    folder.mkdir()
    script.write_text(SCRIPT + "\nimport shutil; shutil.rmtree(%r)\n" % str(folder))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=audit_environment(REPRO_AUDIT_TRACE=folder / "run-000.trace.jsonl",
                                                REPRO_AUDIT_SEED=3, FORM="exit"))
    assert done.returncode != 0
    assert "could not be written" in done.stderr


@pytest.fixture
def exec_audit(tmp_path, tool):
    """exec of SCRIPT into tmp_path/out with the options given, the keywords its environment."""
    def audit(*options, **extra):
        script = tmp_path / "train.py"
        script.write_text(SCRIPT)
        return tool("exec", "--out", tmp_path / "out", *options, "--", sys.executable, script,
                    **extra)
    return audit


def test_exec_moves_a_failed_trace_away_and_resume_runs_it_again(tmp_path, tool, exec_audit):
    marker = tmp_path / "failed-once"
    first = exec_audit("--runs", "3", FAIL_AT=2, RUN_FAILS=1, FAIL_ONCE=marker)
    assert first.returncode == 3, first.stderr
    assert "run 1: the command ended with exit status 1" in first.stderr
    out = tmp_path / "out"
    assert not (out / "run-001.trace.jsonl").exists()  # never left under a whole trace's name
    assert json.loads((out / "run-001" / "failed.trace.jsonl").read_text().splitlines()[-1])[
        "status"] == "failed"
    # compare DIR: the failed run is missing, named, and the audit incomplete (exit 4).
    report = tool("compare", out, "--json", "-")
    assert report.returncode == 4, report.stderr
    missing = json.loads(report.stdout)["audit_folders"][0]["missing_runs"]
    assert [m["run"] for m in missing] == [1, 2]
    # The failed run's reason is its exception, from the trace kept in its folder, not "no trace".
    assert missing[0]["reason"] == ("the run failed (ZeroDivisionError) after 3 steps "
                                    "(run-001/failed.trace.jsonl)")
    text = tool("compare", out).stdout
    assert "failed (ZeroDivisionError) after 3 steps" in text
    assert "\\n" not in text  # no escaped line break in a reason
    resumed = exec_audit("--runs", "3", "--resume", FAIL_AT=2, RUN_FAILS=1, FAIL_ONCE=marker)
    assert resumed.returncode == 0, resumed.stderr
    assert "BITWISE IDENTICAL: all 3 same-seed runs" in resumed.stdout
    assert not (out / "run-001" / "failed.trace.jsonl").exists()


def test_a_failed_trace_left_in_a_folder_is_missing_for_compare_and_resume(tmp_path, tool,
                                                                           exec_audit,
                                                                           run_by_hand):
    """A failed trace under a run's own name (a shard's, or one put back by hand): compare DIR
    names it as missing, with the exception, and --resume runs it again."""
    first = exec_audit("--runs", "2")
    assert first.returncode == 0, first.stderr
    out = tmp_path / "out"
    manifest = json.loads((out / "audit.json").read_text())
    failed_by_hand = run_by_hand(run=1, seed=42, FAIL_AT=2, REPRO_AUDIT_ID=manifest["audit_id"],
                                 REPRO_AUDIT_SPEC=json.dumps(manifest["spec"]))[1]
    os.replace(failed_by_hand, out / "run-001.trace.jsonl")
    report = tool("compare", out, "--json", "-")
    assert report.returncode == 4, report.stderr
    missing = json.loads(report.stdout)["audit_folders"][0]["missing_runs"]
    assert missing[0]["run"] == 1
    assert "failed (ZeroDivisionError) after 3 steps" in missing[0]["reason"]
    resumed = exec_audit("--runs", "2", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert end_record(out / "run-001.trace.jsonl")["status"] == "completed"


def test_exec_names_a_trace_it_refuses_without_the_wrong_hint(tmp_path, tool):
    """A trace that is there but refused (a recorder of another version, a damaged file) is said
    to be refused, with the reader's reason: not "does it create the recorder?"."""
    script = tmp_path / "train.py"
    script.write_text("import os\nopen(os.environ['REPRO_AUDIT_TRACE'], 'w').write('{}\\n')\n")
    done = tool("exec", "--out", tmp_path / "out", "--", sys.executable, script)
    assert done.returncode == 3
    assert "wrote a trace this tool refuses" in done.stderr
    assert "Recorder.from_env" not in done.stderr and "record(model" not in done.stderr
    assert (tmp_path / "out" / "run-000" / "failed.trace.jsonl").exists()
