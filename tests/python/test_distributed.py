"""Data-parallel runs (docs/distributed.md): one trace per rank, rank r of each run compared with
rank r of the reference run, replicas checked against each other within a run, and a run whole
only when every rank's trace is. Two gloo ranks on the CPU, a tiny model, a few steps; the ranks
start through `python3 -m repro_audit.launch` (what torchrun sets; Debian's torch 1.13 cannot
start torchrun under Python 3.11; tests/python/test_launch.py tests the launcher itself).
The tool runs through conftest.py's `tool` (REPRO_AUDIT_BINARY names the built binary; CTest sets
it)."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("torch.distributed")

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")
LAUNCH = [sys.executable, "-m", "repro_audit.launch"]
TRAIN = os.path.join(SCRIPTS, "ddp_train.py")


# A launcher's variables in the caller's environment would make each process one rank of it.
LAUNCHER_VARIABLES = ("RANK", "WORLD_SIZE")


def exec_audit(tool, out, *options, ranks=2, **extra):
    launch = [*LAUNCH, ranks, TRAIN] if ranks > 1 else [sys.executable, TRAIN]
    return tool("exec", "--out", out, "--json", "-", *options, "--", *launch,
                without=LAUNCHER_VARIABLES, **extra)


def header(trace):
    with open(trace, encoding="utf-8") as f:
        return json.loads(f.readline())


def test_each_rank_writes_its_trace_and_seeded_runs_agree_per_rank_and_across_replicas(
        tool, tmp_path):
    done = exec_audit(tool, tmp_path / "out", "--runs", "2")
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    for run in (0, 1):
        rank0 = header(out / f"run-{run:03d}.trace.jsonl")
        rank1 = header(out / f"run-{run:03d}" / "rank-1.trace.jsonl")
        assert rank0["distributed"] == {"rank": 0, "world_size": 2, "backend": "gloo",
                                        "nccl": {}, "comm_hook": "default",
                                        "bucket_cap_bytes": 25 * 1024 * 1024}
        assert rank1["distributed"]["rank"] == 1 and rank1["run_index"] == run
    report = json.loads(done.stdout)
    assert report["verdict"]["identical"] and not report["verdict"]["diverged"]
    distributed = report["distributed"]
    assert distributed["world_size"] == 2 and distributed["backend"] == "gloo"
    assert distributed["ranks"] == [{"rank": 1, "identical": True, "first_divergence": None}]
    assert distributed["replicas_parted"] is None and distributed["runs_checked"] == 2
    assert report["audit_folders"][0]["foreign_files"] == []  # rank traces are the audit's own
    # Each rank trains its own half of the batch: expected, and said so.
    assert any(e.startswith("batches differ between ranks")
               for e in distributed["expected_differences"])
    # DDP's own all-reduce, wrapped: every bucket as in the reference run.
    assert distributed["comm_hook"] == "default"
    assert distributed["collective"] is None and distributed["bucket_layout"] is None
    step = json.loads(open(out / "run-001" / "rank-1.trace.jsonl").readlines()[2])
    assert [b["bucket"] for b in step["collectives"]] == [0]
    assert sorted(step["collectives"][0]["params"]) == ["0.bias", "0.weight", "2.bias", "2.weight"]
    assert step["collectives"][0]["elements"] == 6 * 5 + 5 + 5 * 2 + 2


def test_a_hook_that_varies_from_run_to_run_is_localised_to_the_collective_of_its_bucket(
        tool, tmp_path):
    # The test-only hook adds run r's epsilon to bucket 0's result: the inputs of run 1's first
    # all-reduce are run 0's on both ranks, its result is not.
    done = exec_audit(tool, tmp_path / "out", "--runs", "2", EPSILON_BUCKET=0)
    assert done.returncode == 1, done.stderr
    distributed = json.loads(done.stdout)["distributed"]
    assert distributed["comm_hook"] == "allreduce_plus_epsilon"
    collective = distributed["collective"]
    assert {k: collective[k] for k in ("run", "step", "bucket", "rank", "inputs_identical",
                                       "cause")} == {
        "run": 1, "step": 0, "bucket": 0, "rank": 0, "inputs_identical": True,
        "cause": "collective"}
    assert sorted(collective["params"]) == ["0.bias", "0.weight", "2.bias", "2.weight"]
    # Both ranks got the same (other) result: the replicas still agree.
    assert distributed["replicas_parted"] is None and distributed["bucket_layout"] is None
    text = tool("compare", tmp_path / "out")
    assert text.returncode == 1
    assert ("root cause: the collective (gloo, hook allreduce_plus_epsilon): bucket 0 "
            "(4 parameters") in text.stdout
    assert "at step 0 of run 1 had identical inputs on every rank" in text.stdout
    assert "--trace-ops" not in text.stdout  # no op inside a rank to localise


def test_the_recorders_default_hook_gives_ddps_own_gradients_bitwise(audit_environment):
    # 3 ranks: 1/3 is no power of two, so a division (torch's allreduce_hook: HOOK=allreduce_hook
    # makes this check print False) and DDP's multiplication differ in bits.
    done = subprocess.run([*LAUNCH, "3", os.path.join(SCRIPTS, "ddp_default_hook.py")],
                          capture_output=True, text=True,
                          env=audit_environment(without=LAUNCHER_VARIABLES))
    assert done.returncode == 0, done.stderr
    # Three processes print into one pipe: their lines may interleave.
    found = re.findall(r"rank (\d): same gradients: (True|False)", done.stdout)
    assert sorted(found) == [(str(r), "True") for r in range(3)]


def test_another_bucket_cap_is_named_between_audits(tool, tmp_path):
    default, capped = tmp_path / "default", tmp_path / "capped"
    assert exec_audit(tool, default, "--runs", "1", "--allow-empty").returncode == 0
    assert exec_audit(tool, capped, "--runs", "1", "--allow-empty",
                      BUCKET_CAP_MB="0.00001").returncode == 0
    done = tool("compare", default / "run-000.trace.jsonl", capped / "run-000.trace.jsonl",
                "--json", "-")
    layout = json.loads(done.stdout)["distributed"]["bucket_layout"]
    assert layout["step"] is None
    assert layout["run"] == 1  # as the report numbers the runs: both traces are their run 0
    assert layout["difference"] == ("bucket cap (bucket_cap_mb) 26214400 bytes in run 0, 10 bytes "
                                    "in run 1")


def test_a_rank_whose_gradient_is_changed_after_the_all_reduce_is_named_desynchronised(
        tool, tmp_path):
    done = exec_audit(tool, tmp_path / "out", "--runs", "2", PERTURB_AT=2)
    assert done.returncode == 1, done.stderr
    parted = json.loads(done.stdout)["distributed"]["replicas_parted"]
    assert parted == {"run": 0, "step": 2, "tensor": "0.weight", "rank": 1,
                      "reference_rank": 0}
    text = tool("compare", tmp_path / "out")
    assert text.returncode == 1
    assert ("replicas desynchronised at step 2 of run 0: rank 1's 0.weight differs from "
            "rank 0's") in text.stdout


def test_a_1_process_audit_against_a_2_process_one_is_world_size_as_a_configuration(
        tool, tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    assert exec_audit(tool, one, "--runs", "1", "--allow-empty", ranks=1).returncode == 0
    assert exec_audit(tool, two, "--runs", "1", "--allow-empty").returncode == 0
    # Identity expected (exec's own expectation): runs of other world sizes do not fail it.
    files = [str(one / "run-000.trace.jsonl"), str(two / "run-000.trace.jsonl"), "--expect",
             "identical"]
    done = tool("compare", *files, "--json", "-")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    # Each world size is a command of its own (the launcher's count is in it): a configuration.
    assert report["world_sizes"] == {"of_runs": [1, 2], "identical_within": True,
                                     "configuration": True}
    assert not report["verdict"]["identical"] and not report["verdict"]["diverged"]
    # Rank 0 trains half of the global batch the single process trains: where they part first.
    first = report["first_divergence"]
    assert (first["category"], first["step"]) == ("batches", 0)
    text = tool("compare", *files)
    assert text.returncode == 0
    assert "DIFFERENT WORLD SIZES" in text.stdout
    assert "world size as a configuration: run 0 1 process; run 1 2 ranks" in text.stdout
    assert "first batches at step 0 (inputs)" in text.stdout
    # Two runs of one world size that differ are still a divergence (the epsilon hook's run 1).
    varied = tmp_path / "varied"
    assert exec_audit(tool, varied, "--runs", "2", EPSILON_BUCKET=0).returncode == 1
    mixed = tool("compare", varied / "run-001.trace.jsonl", *files, "--json", "-")
    assert mixed.returncode == 1, mixed.stderr
    assert json.loads(mixed.stdout)["world_sizes"] == {"of_runs": [2, 1, 2],
                                                       "identical_within": False,
                                                       "configuration": True}


def test_a_rank_killed_mid_run_leaves_an_incomplete_run_that_resume_reruns_whole(tool, tmp_path):
    out, marker = tmp_path / "out", tmp_path / "killed-once"
    first = exec_audit(tool, out, "--runs", "2", KILL_AT=1, KILL_ONCE=marker)
    assert first.returncode == 3, first.stderr
    assert "run 0: the command ended with" in first.stderr
    assert not (out / "run-000.trace.jsonl").exists()
    assert not (out / "run-000" / "rank-1.trace.jsonl").exists()
    resumed = exec_audit(tool, out, "--runs", "2", "--resume", KILL_AT=1, KILL_ONCE=marker)
    assert resumed.returncode == 0, resumed.stderr
    report = json.loads(resumed.stdout)
    assert report["verdict"]["complete"] and report["verdict"]["identical"]
    assert report["distributed"]["ranks"][0]["identical"]


def test_a_run_missing_a_rank_trace_is_not_whole_and_resume_reruns_it(tool, tmp_path):
    out = tmp_path / "out"
    assert exec_audit(tool, out, "--runs", "2").returncode == 0
    os.remove(out / "run-001" / "rank-1.trace.jsonl")
    report = tool("compare", out, "--json", "-")
    assert report.returncode == 4, report.stderr
    missing = json.loads(report.stdout)["audit_folders"][0]["missing_runs"]
    assert [m["run"] for m in missing] == [1]
    assert "has no trace run-001/rank-1.trace.jsonl of rank 1 of 2" in missing[0]["reason"]
    resumed = exec_audit(tool, out, "--runs", "2", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert (out / "run-001" / "rank-1.trace.jsonl").exists()


def test_runs_of_one_command_that_came_up_with_different_world_sizes_fail_every_reader(
        tool, tmp_path):
    """One command whose runs start different numbers of ranks (here on purpose: the count is
    the run's index plus one) trained other configurations than the audit asked for: exit 1, and
    the JSON, the text and the JUnit report say the same (issue 61: exit 0, diverged false, under
    a JUnit report that failed 4 cases)."""
    out, junit = tmp_path / "out", tmp_path / "junit.xml"
    launch = " ".join([*LAUNCH, '"$((REPRO_AUDIT_RUN + 1))"', TRAIN])
    done = tool("exec", "--out", out, "--runs", 2, "--junit", junit, "--json", "-", "--", "sh",
                "-c", "exec " + launch, without=LAUNCHER_VARIABLES)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["world_sizes"]["of_runs"] == [1, 2]
    assert report["world_sizes"]["configuration"] is False
    assert report["verdict"]["diverged"] is True
    assert 'failures="0"' not in junit.read_text()
    assert 'type="world-size"' in junit.read_text()
    text = tool("compare", out)
    assert text.returncode == 1
    assert "world sizes DIFFER within one command" in text.stdout


def test_compare_of_trace_files_refuses_a_rank_trace_of_another_run(tool, tmp_path):
    """compare of two runs' trace files read each run's rank traces beside it unchecked: a rank
    trace of another run was compared as this run's (issue 61). They are checked as an audit
    folder's are: the run, the audit, the rank, the world size."""
    out = tmp_path / "out"
    assert exec_audit(tool, out, "--runs", "2").returncode == 0
    shutil.copyfile(out / "run-000" / "rank-1.trace.jsonl", out / "run-001" / "rank-1.trace.jsonl")
    done = tool("compare", out / "run-000.trace.jsonl", out / "run-001.trace.jsonl")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "run-001/rank-1.trace.jsonl that is of run 0" in done.stderr
