"""The rank launcher, `python3 -m repro_audit.launch N script.py` (lib/python/repro_audit/launch.py,
docs/distributed.md): what each rank sees, how the ranks end with the launcher and it with them,
bad usage, and an exec audit through it named after the script. The ranks are a probe script
that writes what it saw and its pid, then exits, fails or sleeps; each test waits on files and
pids, never on a fixed sleep. The tool and the environment come from conftest.py
(REPRO_AUDIT_BINARY names the built binary; CTest sets it)."""
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")
TRAIN = os.path.join(SCRIPTS, "ddp_train.py")
LAUNCH = [sys.executable, "-m", "repro_audit.launch"]
TORCHRUN_VARIABLES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                      "MASTER_PORT", "GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_RANK",
                      "ROLE_WORLD_SIZE", "ROLE_NAME", "TORCHELASTIC_RESTART_COUNT",
                      "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID", "OMP_NUM_THREADS")
WAIT_S = 20.0  # an upper bound on waits that take well under a second when all is well

# PROBE_DIR: where rank R writes rank-R.json (its argv, interpreter, pid, parent, environment),
# atomically, once ready. PROBE_FAIL_RANK fails that rank, once every rank has written its file,
# with PROBE_CODE (an exit code, or "SIGKILL"); PROBE_EXITS ({"R": [code, seconds]}) ends rank R
# with that exit code that many seconds after every rank has written its file (75: an interrupt's,
# as the recorder ends a rank under exec --interrupt-at); PROBE_SLEEP makes the other ranks sleep a minute;
# PROBE_IGNORE_TERM makes them ignore SIGTERM. A rank writes rank-R.signal, the number of the
# SIGINT or SIGTERM it received, before it ends by it.
PROBE = '''
import json, os, signal, sys, time
folder, rank, world = os.environ["PROBE_DIR"], os.environ["RANK"], int(os.environ["WORLD_SIZE"])
def noted(signum, frame):  # which signal reached this rank, then the end it would have had
    with open(os.path.join(folder, "rank-%%s.signal" %% rank), "w") as f:
        f.write(str(signum))
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
signal.signal(signal.SIGINT, noted)
signal.signal(signal.SIGTERM, signal.SIG_IGN if os.environ.get("PROBE_IGNORE_TERM") else noted)
seen = {"argv": sys.argv, "executable": sys.executable, "pid": os.getpid(),
        "ppid": os.getppid(), "env": {k: os.environ.get(k) for k in %r}}
partial = os.path.join(folder, "rank-%%s.tmp" %% rank)
with open(partial, "w") as f:
    json.dump(seen, f)
os.replace(partial, os.path.join(folder, "rank-%%s.json" %% rank))
def everyone_started():
    while not all(os.path.exists(os.path.join(folder, "rank-%%d.json" %% r)) for r in range(world)):
        time.sleep(0.01)
exits = json.loads(os.environ.get("PROBE_EXITS", "{}"))
if rank in exits:
    everyone_started()
    time.sleep(exits[rank][1])
    sys.exit(exits[rank][0])
if rank == os.environ.get("PROBE_FAIL_RANK"):
    while not all(os.path.exists(os.path.join(folder, "rank-%%d.json" %% r)) for r in range(world)):
        time.sleep(0.01)
    code = os.environ["PROBE_CODE"]
    if code == "SIGKILL":
        os.kill(os.getpid(), signal.SIGKILL)
    sys.exit(int(code))
if os.environ.get("PROBE_SLEEP"):
    time.sleep(60)
''' % (TORCHRUN_VARIABLES,)


@pytest.fixture
def probe(tmp_path):
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    (tmp_path / "seen").mkdir()
    return script


@pytest.fixture
def probe_env(tmp_path, audit_environment):
    """The launcher's environment: the caller's without torchrun's variables (the launcher sets
    each rank's), PROBE_DIR the test's, and the keywords given."""
    def environment(**extra):
        return audit_environment(without=TORCHRUN_VARIABLES, PROBE_DIR=tmp_path / "seen",
                                 **extra)
    return environment


def default_signals():
    # A test run from a background job may inherit SIGINT ignored, which the launcher keeps
    # ignoring: the launcher under test starts with the dispositions a terminal gives.
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def start(args, env):
    return subprocess.Popen([*LAUNCH, *map(str, args)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=default_signals)


def seen_by_ranks(tmp_path, world):
    """Each rank's probe record, once all are written."""
    folder = tmp_path / "seen"
    deadline = time.monotonic() + WAIT_S
    while not all((folder / f"rank-{r}.json").exists() for r in range(world)):
        assert time.monotonic() < deadline, "the ranks did not all start"
        time.sleep(0.02)
    return [json.loads((folder / f"rank-{r}.json").read_text()) for r in range(world)]


def alive(pid):
    """Whether `pid` runs: a zombie (an orphan not yet reaped by whoever adopted it) does not."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def signals_received(tmp_path, ranks):
    folder = tmp_path / "seen"
    return [int((folder / f"rank-{r}.signal").read_text())
            if (folder / f"rank-{r}.signal").exists() else None for r in ranks]


def wait_gone(pids):
    deadline = time.monotonic() + WAIT_S
    while any(alive(p) for p in pids):
        assert time.monotonic() < deadline, f"ranks still running: {[p for p in pids if alive(p)]}"
        time.sleep(0.02)


@pytest.mark.parametrize("spelling", [["3"], ["--standalone", "--nproc-per-node", "3"],
                                      ["--nproc_per_node=3"]])
def test_each_rank_sees_what_torchrun_sets_and_runs_the_script_as_itself(tmp_path, probe,
                                                                         probe_env, spelling):
    launcher = start([*spelling, probe, "--lr", "0.1"], probe_env())
    _, err = launcher.communicate(timeout=WAIT_S)
    assert launcher.returncode == 0, err
    seen = seen_by_ranks(tmp_path, 3)
    port = seen[0]["env"]["MASTER_PORT"]
    assert port.isdigit() and 0 < int(port) < 65536
    for rank, s in enumerate(seen):
        assert s["env"] == {
            "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "3",
            "LOCAL_WORLD_SIZE": "3", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port,
            "GROUP_RANK": "0", "GROUP_WORLD_SIZE": "1", "ROLE_RANK": str(rank),
            "ROLE_WORLD_SIZE": "3", "ROLE_NAME": "default", "TORCHELASTIC_RESTART_COUNT": "0",
            "TORCHELASTIC_MAX_RESTARTS": "0", "TORCHELASTIC_RUN_ID": "none",
            "OMP_NUM_THREADS": "1"}
        # The script is the program (the recorder names the trace after sys.argv[0]), run by
        # the launcher itself with the launcher's interpreter.
        assert s["argv"] == [str(probe), "--lr", "0.1"]
        assert s["executable"] == sys.executable and s["ppid"] == launcher.pid


def test_a_chosen_port_and_thread_count_are_kept(tmp_path, probe, probe_env):
    launcher = start(["--master-port", "29517", "2", probe],
                     probe_env(OMP_NUM_THREADS=2))
    _, err = launcher.communicate(timeout=WAIT_S)
    assert launcher.returncode == 0, err
    for s in seen_by_ranks(tmp_path, 2):
        assert (s["env"]["MASTER_PORT"], s["env"]["OMP_NUM_THREADS"]) == ("29517", "2")


@pytest.mark.parametrize("code,status", [("7", 7), ("SIGKILL", 128 + signal.SIGKILL)])
def test_a_failing_rank_ends_the_others_and_gives_the_launcher_its_status(tmp_path, probe, code,
                                                                          status, probe_env):
    launcher = start(["3", probe], probe_env(PROBE_FAIL_RANK=1, PROBE_CODE=code,
                                             PROBE_SLEEP=1))
    _, err = launcher.communicate(timeout=WAIT_S)  # the others sleep a minute unless stopped
    assert launcher.returncode == status, err
    pids = [s["pid"] for s in seen_by_ranks(tmp_path, 3)]
    assert "rank 1 (pid %d) " % pids[1] in err and "stopping the other ranks" in err
    wait_gone(pids)
    assert signals_received(tmp_path, (0, 2)) == [signal.SIGTERM] * 2  # told, not left to sleep


def test_ranks_that_all_stop_at_an_interrupt_end_the_launcher_with_75(tmp_path, probe,
                                                                       probe_env):
    # Rank 0 ends interrupted first; rank 1 still saves for a second: it is waited for, not
    # stopped (torchrun would stop it and fail), and the launcher passes 75 on to exec.
    launcher = start(["2", probe], probe_env(PROBE_EXITS=json.dumps(
        {"0": [75, 0], "1": [75, 1.0]})))
    _, err = launcher.communicate(timeout=WAIT_S)
    assert launcher.returncode == 75, err
    assert "stopping" not in err
    assert signals_received(tmp_path, (0, 1)) == [None, None]


@pytest.mark.parametrize("second, status, words", [
    ([0, 0.5], 1, "rank 1 exited with status 0, but rank 0 was interrupted (status 75): every "
                  "rank must stop at the same save"),
    ([7, 0.5], 7, "rank 1 (pid %d) exited with status 7; stopping the other ranks"),
])
def test_an_interrupt_that_not_every_rank_reaches_fails_the_launch(tmp_path, probe, second,
                                                                   status, words, probe_env):
    launcher = start(["2", probe], probe_env(PROBE_EXITS=json.dumps(
        {"0": [75, 0], "1": second})))
    _, err = launcher.communicate(timeout=WAIT_S)
    assert launcher.returncode == status, err
    if "%d" in words:
        words %= seen_by_ranks(tmp_path, 2)[1]["pid"]
    assert words in err


def test_a_rank_still_running_past_the_interrupt_grace_is_stopped(tmp_path, probe, probe_env):
    launcher = start(["--interrupt-grace", "0.5", "2", probe], probe_env(
        PROBE_EXITS=json.dumps({"0": [75, 0]}), PROBE_SLEEP=1))
    _, err = launcher.communicate(timeout=WAIT_S)  # rank 1 sleeps a minute unless stopped
    assert launcher.returncode == 1, err
    assert "rank(s) 1 still running 0.5 s after rank 0 was interrupted (status 75)" in err
    assert signals_received(tmp_path, (1,)) == [signal.SIGTERM]


def test_a_rank_that_ignores_sigterm_is_killed_after_the_grace(tmp_path, probe, probe_env):
    # The grace shortened to half a second: launch.main's argument, as the module runs it.
    command = [sys.executable, "-c", "import sys; from repro_audit import launch; "
               "sys.exit(launch.main(sys.argv[1:], grace_s=0.5))", "2", str(probe)]
    env = probe_env(PROBE_FAIL_RANK=1, PROBE_CODE=3, PROBE_SLEEP=1,
                    PROBE_IGNORE_TERM=1)
    started = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=WAIT_S)
    assert done.returncode == 3, done.stderr
    assert time.monotonic() - started < 30  # not rank 0's minute of sleep
    wait_gone([s["pid"] for s in seen_by_ranks(tmp_path, 2)])


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_launcher_reaches_the_ranks_and_ends_it_by_that_signal(tmp_path, probe,
                                                                               probe_env, signum):
    launcher = start(["2", probe], probe_env(PROBE_SLEEP=1))
    pids = [s["pid"] for s in seen_by_ranks(tmp_path, 2)]
    launcher.send_signal(signum)
    launcher.communicate(timeout=WAIT_S)
    assert launcher.returncode == -signum  # what a single process stopped by it shows
    wait_gone(pids)  # no orphan left training
    assert signals_received(tmp_path, (0, 1)) == [signum] * 2  # passed on, not left to the grace


def test_kill_9_of_the_launcher_ends_its_ranks(tmp_path, probe, probe_env):
    # No handler of the launcher runs: the ranks end by PR_SET_PDEATHSIG (issue 61: a kill -9 of
    # exec left a launcher's ranks training and writing into the audit folder).
    launcher = start(["2", probe], probe_env(PROBE_SLEEP=1))
    pids = [s["pid"] for s in seen_by_ranks(tmp_path, 2)]
    launcher.kill()
    launcher.communicate(timeout=WAIT_S)
    assert launcher.returncode == -signal.SIGKILL
    wait_gone(pids)
    assert signals_received(tmp_path, (0, 1)) == [None, None]  # SIGKILL: no handler ran


@pytest.mark.parametrize("args,message", [
    ([], "missing N, the number of ranks, and the script"),
    (["2"], "missing the script"),
    (["0", "{probe}"], "'0' is not a positive integer"),
    (["-1", "{probe}"], "'-1' is not a positive integer"),
    (["two", "{probe}"], "'two' is not a positive integer"),
    (["{probe}"], "is not a positive integer"),  # N forgotten: the script is no count
    (["--nproc-per-node", "1.5", "{probe}"], "--nproc-per-node: '1.5' is not a positive integer"),
    (["--nproc-per-node", "2"], "missing the script"),
    (["2", "{missing}"], "no such file"),
    (["--nnodes", "2", "2", "{probe}"], "one node only"),
    (["--master-port", "70000", "2", "{probe}"], "no TCP port"),
    (["--interrupt-grace", "0", "2", "{probe}"], "--interrupt-grace: '0' is not a number"),
    (["--interrupt-grace", "inf", "2", "{probe}"], "--interrupt-grace: 'inf' is not a number"),
    (["--rdzv-backend", "c10d", "2", "{probe}"], "unrecognized arguments: --rdzv-backend"),
])
def test_bad_usage_is_said_and_exits_2(tmp_path, probe, probe_env, args, message):
    args = [a.format(probe=probe, missing=tmp_path / "missing.py") for a in args]
    done = subprocess.run([*LAUNCH, *args], env=probe_env(), capture_output=True,
                          text=True, timeout=WAIT_S)
    assert done.returncode == 2, done.stderr
    assert "usage: python3 -m repro_audit.launch" in done.stderr and message in done.stderr
    assert not list((tmp_path / "seen").iterdir())  # no rank started


def test_the_launcher_imports_no_torch_under_an_audit(tmp_path, probe_env):
    # Importing the package under an audit wraps DDP's hooks (collective.py), which imports
    # torch: a second or more of every run, spent by a process that never records.
    pytest.importorskip("torch")
    done = subprocess.run([sys.executable, "-X", "importtime", *LAUNCH[1:]], capture_output=True,
                          text=True, timeout=WAIT_S,
                          env=probe_env(REPRO_AUDIT_TRACE=tmp_path / "run.trace.jsonl"))
    imported = re.findall(r"^import time:[^|]*\|[^|]*\|\s*(\S+)$", done.stderr, re.M)
    assert done.returncode == 2 and "repro_audit.recorder" in imported
    assert not [m for m in imported if m == "torch" or m.startswith("torch.")]


def header(trace):
    with open(trace, encoding="utf-8") as f:
        return json.loads(f.readline())


def test_an_exec_audit_through_the_launcher_is_identical_and_named_after_the_script(
        tmp_path, probe_env, repro_audit_binary):
    pytest.importorskip("torch")
    pytest.importorskip("torch.distributed")
    out = tmp_path / "out"
    command = [repro_audit_binary, "exec", "--runs", "2", "--out", str(out), "--json", "-", "--",
               *LAUNCH, "2", TRAIN]
    done = subprocess.run(command, capture_output=True, text=True, env=probe_env(),
                          timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["verdict"]["identical"] and report["verdict"]["complete"]
    assert report["distributed"]["world_size"] == 2
    assert report["distributed"]["ranks"] == [{"rank": 1, "identical": True,
                                               "first_divergence": None}]
    manifest = json.loads((out / "audit.json").read_text())
    assert manifest["spec"]["name"] == "ddp_train"
    for run in (0, 1):
        for trace in (out / f"run-{run:03d}.trace.jsonl",
                      out / f"run-{run:03d}" / "rank-1.trace.jsonl"):
            assert header(trace)["spec"]["name"] == "ddp_train"


def test_a_trace_recorded_by_hand_through_the_launcher_is_named_after_the_script(
        tmp_path, probe_env):
    pytest.importorskip("torch")
    pytest.importorskip("torch.distributed")
    trace = tmp_path / "run-000.trace.jsonl"
    done = subprocess.run([*LAUNCH, "2", TRAIN], capture_output=True, text=True, timeout=120,
                          env=probe_env(REPRO_AUDIT_TRACE=trace))
    assert done.returncode == 0, done.stderr
    for path in (trace, tmp_path / "run-000" / "rank-1.trace.jsonl"):
        assert header(path)["spec"] == {"name": "ddp_train", "source": "pytorch"}
