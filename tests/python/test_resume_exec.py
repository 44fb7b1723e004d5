"""exec --interrupt-at on Debian's torch (docs/resume.md, "PyTorch"): the checkpointing example
(docs/examples/pytorch/train_checkpointed.py) resumes exactly, its --buggy variant is diagnosed
with both causes worded as the fix, a script without checkpoint functions fails with a clear
error, and a kill -9 during the interrupt's save or the restore leaves an audit that `exec
--resume` finishes. REPRO_AUDIT_BINARY names the built binary (CTest sets it)."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")

from repro_audit import Checkpoint, checkpoint  # noqa: E402

BINARY = os.environ.get("REPRO_AUDIT_BINARY", "")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "docs", "examples", "pytorch", "train_checkpointed.py")


def audit(out, *options, script=EXAMPLE, script_args=(), **env):
    """`repro-audit exec` of the script: (exit status, JSON report or None, stdout, stderr)."""
    assert BINARY and os.access(BINARY, os.X_OK), "REPRO_AUDIT_BINARY names no binary"
    environment = {k: v for k, v in os.environ.items() if not k.startswith("REPRO_AUDIT_")}
    environment.update(PYTHONPATH=os.pathsep.join(sys.path), **env)
    report = out.parent / (out.name + "-report.json")
    done = subprocess.run([BINARY, "exec", "--out", str(out), "--runs", "2", "--json",
                           str(report), *options, "--", sys.executable, str(script),
                           *script_args], capture_output=True, text=True, env=environment,
                          timeout=300)
    parsed = json.loads(report.read_text()) if report.exists() else None
    return done.returncode, parsed, done.stdout, done.stderr


def test_the_checkpointing_example_resumes_exactly(tmp_path):
    status, report, text, errors = audit(tmp_path / "out", "--interrupt-at", "12",
                                         "--interrupt-at", "5")
    assert status == 0, text + errors
    resumes = report["resumes"]
    assert [(r["run"], r["step"], r["exact"]) for r in resumes] == [(1, 5, True), (1, 12, True)]
    assert all(r["differing"] == [] and r["first_divergence"] is None for r in resumes)
    assert all(r["checkpoint"]["by"] == "script" and r["checkpoint"]["bytes"] > 0
               for r in resumes)
    assert "resume of run 1 at step 5: exact" in text
    assert "the script's save took" in text
    folder = tmp_path / "out" / "run-001"
    assert sorted(p.name for p in folder.glob("checkpoint-step-*")) == [
        "checkpoint-step-12.pt", "checkpoint-step-12.recorder.json", "checkpoint-step-5.pt",
        "checkpoint-step-5.recorder.json"]
    assert not list((tmp_path / "out" / "run-000").glob("checkpoint-step-*"))  # never stopped


def test_the_checkpointing_example_runs_under_different_seeds(tmp_path):
    """exec --seeds different gives 64-bit seeds: the example's sampler overflowed a generator's
    seed with them (issue 61)."""
    status, report, text, errors = audit(tmp_path / "out", "--seeds", "different",
                                         "--interrupt-at", "5")
    assert status == 0, text + errors
    assert "DIFFERENT SEEDS ONLY (2 runs)" in text
    assert "resumes" not in report  # runs of other seeds are no resumption of run 0


def test_the_buggy_example_is_diagnosed_with_both_causes(tmp_path):
    status, report, text, errors = audit(tmp_path / "out", "--interrupt-at", "5",
                                         script_args=["--buggy"])
    assert status == 1, text + errors
    (resume,) = report["resumes"]
    assert resume["step"] == 5 and not resume["exact"]
    assert resume["differing"] == [{"piece": "rng_stream", "stream": "torch"},
                                   {"piece": "next_batch"}]
    assert resume["first_divergence"]["step"] == 5
    assert "torch's RNG state was not restored" in text
    assert "save torch.get_rng_state() and restore it with torch.set_rng_state()" in text
    # torch's generator differs too: the words say what a sampler draws from it, no guess.
    assert "a RandomSampler without a generator of its own draws each epoch's order" in text
    assert "sampler started again from the beginning" not in text
    assert "(a resumable sampler)" in text


@pytest.mark.parametrize("forget, piece, words", [
    ("buffers", {"piece": "buffers"}, "BatchNorm's running statistics) were not restored"),
    ("optimizer", {"piece": "optimizer_state"}, "save optimizer.state_dict() and load it"),
    ("scheduler", {"piece": "lr_scheduler"}, "save scheduler.state_dict() and load it"),
    ("numpy_rng", {"piece": "rng_stream", "stream": "numpy"},
     "save numpy.random.get_state() and restore it with numpy.random.set_state()"),
    ("python_rng", {"piece": "rng_stream", "stream": "python_random"},
     "save random.getstate() and restore it with random.setstate()"),
])
def test_each_piece_left_out_is_named_alone(tmp_path, forget, piece, words):
    status, report, text, errors = audit(tmp_path / "out", "--interrupt-at", "5",
                                         script_args=["--forget", forget])
    assert status == 1, text + errors
    (resume,) = report["resumes"]
    assert resume["differing"] == [piece]
    assert words in text


NO_CHECKPOINT = r"""
import torch, repro_audit
repro_audit.seed_everything()
model = torch.nn.Linear(2, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
with repro_audit.record(model, optimizer) as rec:
    for _ in range(4):
        loss = model(torch.ones(1, 2)).sum()
        loss.backward()
        optimizer.step()
        rec.step(loss=loss)
"""


def test_an_interrupt_without_checkpoint_functions_fails_with_the_reason(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(NO_CHECKPOINT)
    status, report, text, errors = audit(tmp_path / "out", "--interrupt-at", "2", script=script)
    assert status == 3, text + errors
    assert "no checkpoint functions" in errors
    assert "checkpoint=(save, load)" in errors


def test_a_step_the_run_never_passes_fails_the_run(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(NO_CHECKPOINT.replace("record(model, optimizer)",
                                            "record(model, optimizer, checkpoint=(print, print))"))
    status, _, text, errors = audit(tmp_path / "out", "--interrupt-at", "10", script=script)
    assert status == 3, text + errors
    assert "run 0: the command wrote a trace of 4 steps without a resume record at step 10" in errors


def test_interrupts_do_not_combine_with_op_records_yet(tmp_path):
    status, _, text, errors = audit(tmp_path / "out", "--interrupt-at", "5", "--trace-ops", "0")
    assert status == 2, text + errors
    assert "--interrupt-at does not combine with --trace-ops or --keep-op yet" in errors


@pytest.mark.parametrize("where", ["checkpoint", "restore"])
def test_a_kill_during_the_interrupt_leaves_an_audit_that_resume_finishes(tmp_path, where):
    out = tmp_path / "out"
    status, _, text, errors = audit(out, "--interrupt-at", "5",
                                    REPRO_AUDIT_TEST_KILL_AT=where)
    assert status == 3, text + errors
    assert "killed by signal 9" in errors
    assert not (out / "run-001.trace.jsonl").exists()
    status, report, text, errors = audit(out, "--interrupt-at", "5", "--resume")
    assert status == 0, text + errors
    assert [(r["run"], r["step"], r["exact"]) for r in report["resumes"]] == [(1, 5, True)]
    assert not [p.name for p in out.iterdir() if ".tmp-" in p.name]  # the killed one's, gone


# The checkpointing example, with its run folder written by someone else between the interrupt
# and the restart: the recorder's file then names, as the trace's temporary, a file outside the
# audit folder (what version 1 of the file held, and the restarted recorder appended to and
# renamed over the trace).
REDIRECTED = r"""
import json, os, runpy, sys
resume = os.environ.get("REPRO_AUDIT_RESUME_FROM")
if resume:
    with open(resume) as f:
        saved = json.load(f)
    saved["records"]["temporary"] = os.environ["VICTIM"]
    with open(resume, "w") as f:
        json.dump(saved, f)
sys.argv = [os.environ["EXAMPLE"]]
runpy.run_path(os.environ["EXAMPLE"], run_name="__main__")
"""


def test_a_recorder_file_naming_a_trace_outside_the_folder_is_refused(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(REDIRECTED)
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("the user's own file\n")
    status, _, text, errors = audit(tmp_path / "out", "--interrupt-at", "5", script=script,
                                    VICTIM=str(victim), EXAMPLE=EXAMPLE)
    assert [p.name for p in outside.iterdir()] == ["victim.txt"]
    assert victim.read_text() == "the user's own file\n"
    assert status == 3, text + errors
    assert "refused: it names a file for the trace" in errors
    assert "checkpoint-step-5.recorder.json" in errors


def test_an_interrupted_trace_waits_under_a_name_derived_from_its_step(tmp_path):
    trace = str(tmp_path / "run-001.trace.jsonl")
    assert checkpoint.parked_temporary(trace, 12) == trace + ".tmp-0-12"


# Two ranks of a script, with what torchrun sets. A launcher under exec --interrupt-at must let
# every rank write its checkpoint and pass their exit status 75 on (torchrun does not: it stops
# the other ranks and fails); this one does, and stops the ranks when one fails otherwise.
TWO_RANKS = r"""
import os, socket, subprocess, sys, time
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = str(s.getsockname()[1])
ranks = [subprocess.Popen([sys.executable] + sys.argv[1:], env=dict(
    os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE="2", LOCAL_WORLD_SIZE="2",
    MASTER_ADDR="127.0.0.1", MASTER_PORT=port)) for r in range(2)]
while any(p.poll() is None for p in ranks):
    if any(p.returncode not in (None, 0, 75) for p in ranks):
        for p in ranks:
            if p.poll() is None:
                p.kill()
    time.sleep(0.05)
codes = {p.returncode for p in ranks}
sys.exit(codes.pop() if len(codes) == 1 else 1)
"""
DDP_TRAIN = os.path.join(ROOT, "tests", "python", "scripts", "ddp_train.py")


def test_each_rank_of_a_data_parallel_run_resumes_from_its_own_files(tmp_path):
    pytest.importorskip("torch.distributed")
    launcher = tmp_path / "two_ranks.py"
    launcher.write_text(TWO_RANKS)
    out = tmp_path / "out"
    status, report, text, errors = audit(out, "--interrupt-at", "2", script=launcher,
                                         script_args=[DDP_TRAIN], CHECKPOINT="1", STEPS="4")
    assert status == 0, text + errors
    assert [(r["run"], r["step"], r["exact"]) for r in report["resumes"]] == [(1, 2, True)]
    # Rank 0 keeps the run's names (exec looks for its recorder's file); rank 1 its own.
    assert sorted(p.name for p in (out / "run-001").glob("checkpoint-step-*")) == [
        "checkpoint-step-2.pt", "checkpoint-step-2.rank-1.pt",
        "checkpoint-step-2.rank-1.recorder.json", "checkpoint-step-2.recorder.json"]
    for rank, trace in enumerate(("%s.trace.jsonl", "%s/rank-1.trace.jsonl")):
        resumes = []
        for run in ("run-000", "run-001"):
            records = [json.loads(line) for line in (out / (trace % run)).open()]
            assert records[0]["distributed"]["rank"] == rank
            assert [r["step"] for r in records if r["record"] == "step"] == [0, 1, 2, 3]
            (resume,) = [r for r in records if r["record"] == "resume"]
            resumes.append(resume)
        # Each rank's resumed state is its own uninterrupted state, piece by piece.
        assert [(r["step"], r["resumed"]) for r in resumes] == [(2, False), (2, True)]
        assert resumes[0]["state"] == resumes[1]["state"]


def test_a_rank_reads_its_own_resume_file_of_the_step_exec_names(tmp_path):
    def interrupts(resume_from, rank):
        return checkpoint.Interrupts(None, Checkpoint(print, print), [2, 5], 1, str(tmp_path),
                                     resume_from, {}, rank)
    named = str(tmp_path / "checkpoint-step-5.recorder.json")
    assert interrupts(named, 0)._resume_file() == named
    assert interrupts(named, 3)._resume_file() == str(
        tmp_path / "checkpoint-step-5.rank-3.recorder.json")
    for wrong in ("/elsewhere/checkpoint-step-5.recorder.json",
                  str(tmp_path / "checkpoint-step-4.recorder.json"),
                  str(tmp_path / "checkpoint-step-5.rank-3.recorder.json")):
        with pytest.raises(ValueError, match="REPRO_AUDIT_RESUME_FROM"):
            interrupts(wrong, 3)._resume_file()


def test_checkpoint_functions_are_checked_without_an_audit():
    with pytest.raises(TypeError, match="two functions"):
        Checkpoint(print, None)
    with pytest.raises(TypeError, match="expected \\(save, load\\)"):
        checkpoint.checkpoint_of(print)
    with pytest.raises(TypeError, match="state_dict"):
        Checkpoint(print, print, scheduler=object())
    assert checkpoint.checkpoint_of((print, print)).load is print


def test_interrupt_steps_are_read_strictly():
    assert checkpoint.parse_steps("") == []
    assert checkpoint.parse_steps("12,5,5") == [5, 12]
    for text in ("0", "-1", "5,x", "1e3", " 5"):
        with pytest.raises(ValueError, match="REPRO_AUDIT_INTERRUPT_AT"):
            checkpoint.parse_steps(text)
