"""exec owns the processes it starts (docs/pytorch.md "Running it"): a run that exceeds --timeout
is stopped and failed (exit 3); each run has its own process group; SIGTERM to exec reaches the
runs and exec ends; a `kill -9` of exec takes its running command with it; what a run leaves
running in its group ends with it; its output is kept in run-NNN/command.log, a bounded ring.
exec starts from conftest.py's repro_audit_binary in its audit_environment (REPRO_AUDIT_BINARY
names the built binary; CTest sets it)."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("torch")

# Writes its pid, process group and the pid of a child it leaves behind to PIDS, then records a
# run (PRINT_MB megabytes of output first), or hangs (HANG).
SCRIPT = r"""
import json, os, subprocess, sys, time
child = subprocess.Popen(["sleep", "1000"])
with open(os.environ["PIDS"] + "." + os.environ["REPRO_AUDIT_RUN"], "w") as f:
    json.dump({"pid": os.getpid(), "pgid": os.getpgid(0), "child": child.pid}, f)
line = ("x" * 99 + "\n")
for i in range(int(os.environ.get("PRINT_MB", "0")) * 10000):
    sys.stdout.write(line)
print("the last line")
if os.environ.get("HANG"):
    time.sleep(1000)
import torch, repro_audit  # after the pids: importing torch takes seconds on a loaded machine
repro_audit.seed_everything()
model = torch.nn.Linear(2, 2)
with repro_audit.record(model) as rec:
    rec.step(loss=model(torch.ones(1, 2)).sum())
"""


@pytest.fixture
def start_exec(tmp_path, repro_audit_binary, audit_environment):
    """Starts exec of SCRIPT with the options given and the keywords in its environment: the
    Popen, its output piped."""
    def start(*options, **env):
        script = tmp_path / "train.py"
        script.write_text(SCRIPT)
        return subprocess.Popen([repro_audit_binary, "exec", "--out", str(tmp_path / "out"),
                                 *options, "--", sys.executable, str(script)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=audit_environment(PIDS=tmp_path / "pids", **env))
    return start


def pids_of(tmp_path, run=0, wait=60.0):
    path = tmp_path / f"pids.{run}"
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if path.exists() and path.stat().st_size > 0:
            try:
                return json.loads(path.read_text())
            except ValueError:
                pass
        time.sleep(0.05)
    raise AssertionError("the run never started")


def gone(pid, wait=10.0):
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # a zombie of ours (never: exec reaps its own) or of init: gone all the same
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(")")[-1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def test_a_run_past_its_timeout_is_stopped_and_failed(tmp_path, start_exec):
    started = time.monotonic()
    done = start_exec("--runs", "2", "--timeout", "5", HANG=1)
    _, err = done.communicate(timeout=120)
    assert done.returncode == 3, err
    assert "run 0: the command timed out after 5 s (--timeout)" in err
    assert time.monotonic() - started < 60
    pids = pids_of(tmp_path)
    assert gone(pids["pid"]) and gone(pids["child"])


def test_each_run_has_its_own_group_and_leaves_nothing_behind(tmp_path, start_exec):
    done = start_exec("--runs", "2")
    out, err = done.communicate(timeout=120)
    assert done.returncode == 0, err
    for run in (0, 1):
        pids = pids_of(tmp_path, run)
        assert pids["pgid"] == pids["pid"] != os.getpgid(0)
        assert gone(pids["child"])  # the sleep it left behind ended with the run
        assert "the last line" in (tmp_path / "out" / f"run-00{run}" / "command.log").read_text()


def test_sigterm_to_exec_reaches_the_runs(tmp_path, start_exec):
    done = start_exec("--runs", "2", HANG=1)
    pids = pids_of(tmp_path)
    done.send_signal(signal.SIGTERM)
    _, err = done.communicate(timeout=60)
    assert done.returncode == 3, err
    assert "repro-audit received signal 15" in err
    assert gone(pids["pid"]) and gone(pids["child"])
    assert not (tmp_path / "pids.1").exists()  # no run starts after the signal


def test_kill_9_of_exec_takes_its_running_command_with_it(tmp_path, start_exec):
    done = start_exec("--runs", "1", HANG=1)
    pids = pids_of(tmp_path)
    done.kill()
    done.wait(timeout=30)
    assert gone(pids["pid"])
    # What the command started goes too (issue 61: a launcher's ranks went on training): the
    # guard of its process group kills the group once exec is gone.
    assert gone(pids["child"])


def test_the_command_log_is_a_bounded_ring(tmp_path, start_exec):
    done = start_exec("--runs", "2", PRINT_MB=10)
    _, err = done.communicate(timeout=300)
    assert done.returncode == 0, err
    log = tmp_path / "out" / "run-000" / "command.log"
    size = log.stat().st_size
    assert 2 << 20 <= size <= (4 << 20) + 200
    text = log.read_text()
    assert text.startswith("[repro-audit: the first ")
    assert text.rstrip().endswith("the last line")
    assert not (tmp_path / "out" / "run-000" / "command.log.1").exists()
