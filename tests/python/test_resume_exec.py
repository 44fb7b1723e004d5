"""exec --interrupt-at on Debian's torch (docs/resume.md, "PyTorch"). The mnist-shaped example
(docs/examples/pytorch/train_mnist_resumable.py), which saves at its epochs' ends with its own
code and resumes with its own --resume FILE, resumes exactly, through --resume-arg or
REPRO_AUDIT_RESUME_FROM, and its --buggy variant is diagnosed with the pieces it leaves out; the
work a script does after its last step and before its save (test(), scheduler.step()) is done in
the interrupted run. The example with checkpoint functions (train_checkpointed.py, the recorder
saves and loads) resumes exactly and its --buggy variant is diagnosed; bad input fails with its
reason; a kill -9 during the interrupt's save or the restore leaves an audit that `exec --resume`
finishes; a data-parallel run interrupts through repro_audit.launch. The tool runs through
conftest.py's `tool` (REPRO_AUDIT_BINARY names the built binary; CTest sets it)."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")

from repro_audit import Checkpoint, checkpoint, settings  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "docs", "examples", "pytorch")
EXAMPLE = os.path.join(EXAMPLES, "train_checkpointed.py")
MNIST = os.path.join(EXAMPLES, "train_mnist_resumable.py")
RESUME_ARG = "--resume-arg=--resume {checkpoint}"


@pytest.fixture
def audit(tool):
    """`repro-audit exec` of the script (or of `command`): (exit status, JSON report or None,
    stdout, stderr)."""
    def run(out, *options, script=EXAMPLE, script_args=(), command=None, **env):
        report = out.parent / (out.name + "-report.json")
        command = command or [sys.executable, script, *script_args]
        done = tool("exec", "--out", out, "--runs", 2, "--json", report, *options, "--",
                    *command, timeout=300, **env)
        parsed = json.loads(report.read_text()) if report.exists() else None
        return done.returncode, parsed, done.stdout, done.stderr
    return run


def checkpoints(out, run):
    """The names in run `run`'s checkpoint folder (REPRO_AUDIT_CHECKPOINT_DIR)."""
    return sorted(p.name for p in (out / ("run-%03d" % run) / "checkpoints").iterdir())


# -- a script's own save (rec.saved) and resume --

def test_the_mnist_example_resumes_exactly_through_its_own_resume_argument(tmp_path, audit):
    out = tmp_path / "out"
    status, report, text, errors = audit(out, "--interrupt-at", "5", RESUME_ARG, script=MNIST)
    assert status == 0, text + errors
    # The first save at or after step 5 is the end of epoch 1, after step 8.
    (resume,) = report["resumes"]
    assert (resume["run"], resume["step"], resume["interrupt_at"], resume["exact"]) == (
        1, 8, 5, True)
    assert resume["differing"] == [] and resume["first_divergence"] is None
    assert resume["checkpoint"]["bytes"] > 0 and resume["checkpoint"]["write_seconds"] is None
    assert ("resume of run 1 at step 8 (the script's first save at or after --interrupt-at 5): "
            "exact (checkpoint ") in text
    assert "the script's own save and load" in text
    # Every run's script saved in its folder; run 1 stopped inside its first rec.saved().
    assert checkpoints(out, 0) == ["checkpoint-epoch-%d.pt" % e for e in (1, 2, 3)]
    assert checkpoints(out, 1) == ["checkpoint-epoch-%d.pt" % e for e in (1, 2, 3)] + [
        "checkpoint-step-5.recorder.json"]
    log = (out / "run-001" / "command.log").read_text()  # the resumed process's
    resumed_from = out.resolve() / "run-001" / "checkpoints" / "checkpoint-epoch-1.pt"
    assert "resuming after epoch 1 from %s\n" % resumed_from in log
    assert "epoch 1:" not in log and "epoch 2:" in log


def test_the_interrupted_run_did_its_evaluation_and_scheduler_step_before_it_stopped(
        tmp_path, audit):
    # The recorder used to stop a run at the end of its step: pytorch/examples' mnist, whose
    # test() (a shuffling DataLoader, torch's generator) and scheduler.step() come after the
    # epoch's last step, never ran them in the interrupted run, and "exact" was said of runs that
    # parted (issue 61). The save point is now the script's own save, after both.
    torch = pytest.importorskip("torch")
    out = tmp_path / "out"
    status, _, text, errors = audit(out, "--interrupt-at", "8", RESUME_ARG, script=MNIST)
    assert status == 0, text + errors
    saved = torch.load(out / "run-001" / "checkpoints" / "checkpoint-epoch-1.pt")
    assert saved["epoch"] == 1
    assert saved["scheduler"]["last_epoch"] == 1 and saved["scheduler"]["_step_count"] == 2
    recorder_file = json.loads(
        (out / "run-001" / "checkpoints" / "checkpoint-step-8.recorder.json").read_text())
    assert (recorder_file["step"], recorder_file["interrupt_at"]) == (8, 8)
    assert recorder_file["checkpoint"]["file"] == "checkpoint-epoch-1.pt"


OLD_SAVE_POINT = r"""
import os, sys, torch, repro_audit
repro_audit.seed_everything(default=1)
torch.set_num_threads(1)
data = torch.utils.data.TensorDataset(torch.randn(32, 4, generator=torch.Generator().manual_seed(0)),
                                      torch.randint(0, 2, (32,), generator=torch.Generator().manual_seed(1)))
loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
def save(path):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "rng": torch.get_rng_state()}, path)
def load(path):
    state = torch.load(path)
    model.load_state_dict(state["model"]); optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"]); torch.set_rng_state(state["rng"])
checkpoint = repro_audit.Checkpoint(save, load, scheduler=scheduler)
with repro_audit.record(model, optimizer, checkpoint=checkpoint) as rec:
    for epoch in range(rec.start_step // len(loader), 3):
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward(); optimizer.step()
            rec.step(batch=(x, y), loss=loss, epoch=epoch)
        model.eval()
        with torch.no_grad():
            for x, _ in loader:  # the evaluation: a shuffling DataLoader draws from torch's RNG
                model(x)
        scheduler.step()
"""


def test_checkpoint_functions_that_save_before_the_epochs_end_work_are_not_called_exact(
        tmp_path, audit):
    # issue 61's case with the recorder's own save point (the end of the 4th step, the epoch's
    # last): the interrupted run never evaluates nor steps its scheduler for that epoch. The state
    # is compared where both runs start the next step, so the report names what the save missed.
    script = tmp_path / "train.py"
    script.write_text(OLD_SAVE_POINT)
    status, report, text, errors = audit(tmp_path / "out", "--interrupt-at", "4", script=script)
    assert status == 1, text + errors
    (resume,) = report["resumes"]
    assert (resume["step"], resume["exact"]) == (4, False)
    assert {"piece": "lr_scheduler"} in resume["differing"]
    assert {"piece": "rng_stream", "stream": "torch"} in resume["differing"]
    assert "a save before it holds the schedule a step behind" in text


def test_the_mnist_example_resumes_exactly_from_repro_audit_resume_from(tmp_path, audit):
    out = tmp_path / "out"
    status, report, text, errors = audit(out, "--interrupt-at", "5", script=MNIST)
    assert status == 0, text + errors
    assert [(r["step"], r["exact"]) for r in report["resumes"]] == [(8, True)]
    log = (out / "run-001" / "command.log").read_text()
    assert "resuming after epoch 1 from %s" % (
        out.resolve() / "run-001" / "checkpoints" / "checkpoint-epoch-1.pt") in log


def test_the_mnist_example_resumes_exactly_at_two_interrupts(tmp_path, audit):
    status, report, text, errors = audit(tmp_path / "out", "--interrupt-at", "3",
                                         "--interrupt-at", "9", RESUME_ARG, script=MNIST)
    assert status == 0, text + errors
    assert [(r["step"], r["interrupt_at"], r["exact"]) for r in report["resumes"]] == [
        (8, 3, True), (16, 9, True)]


def test_the_buggy_mnist_example_is_diagnosed_with_both_pieces(tmp_path, audit):
    status, report, text, errors = audit(tmp_path / "out", "--interrupt-at", "5", RESUME_ARG,
                                         script=MNIST, script_args=["--buggy"])
    assert status == 1, text + errors
    (resume,) = report["resumes"]
    assert (resume["step"], resume["exact"]) == (8, False)
    assert resume["differing"] == [{"piece": "lr_scheduler"},
                                   {"piece": "rng_stream", "stream": "torch"},
                                   {"piece": "next_batch"}]
    assert "the LR scheduler was not restored" in text
    assert "torch's RNG state was not restored" in text


@pytest.mark.parametrize("forget, pieces, first", [
    ("scheduler", [{"piece": "lr_scheduler"}], 16),  # the rate decays at epoch 2's end
    ("torch_rng", [{"piece": "rng_stream", "stream": "torch"}, {"piece": "next_batch"}], 8),
])
def test_each_piece_the_mnist_example_forgets_is_named(tmp_path, forget, pieces, first, audit):
    status, report, text, errors = audit(tmp_path / "out", "--interrupt-at", "5", RESUME_ARG,
                                         script=MNIST, script_args=["--forget", forget])
    assert status == 1, text + errors
    (resume,) = report["resumes"]
    assert resume["differing"] == pieces
    assert resume["first_divergence"]["step"] == first


def test_a_resume_arg_without_its_checkpoint_is_refused(tmp_path, audit):
    status, _, text, errors = audit(tmp_path / "out", "--interrupt-at", "5",
                                    "--resume-arg=--resume", script=MNIST)
    assert status == 2, text + errors
    assert "--resume-arg '--resume': names no {checkpoint}" in errors
    status, _, text, errors = audit(tmp_path / "out2", RESUME_ARG, script=MNIST)
    assert status == 2, text + errors
    assert "--resume-arg is for --interrupt-at" in errors


def test_a_save_outside_the_checkpoint_folder_fails_the_run_with_the_reason(tmp_path, audit):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    status, _, text, errors = audit(tmp_path / "out", "--interrupt-at", "5", RESUME_ARG,
                                    script=MNIST, script_args=["--save-dir", str(elsewhere)])
    assert status == 3, text + errors
    assert "run 0: the command" in errors
    assert "the file is outside the run's checkpoint folder" in errors
    assert "REPRO_AUDIT_CHECKPOINT_DIR" in errors


NEVER_SAVED = r"""
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


def test_a_script_that_never_tells_the_recorder_of_a_save_fails_with_the_reason(tmp_path, audit):
    script = tmp_path / "train.py"
    script.write_text(NEVER_SAVED)
    status, report, text, errors = audit(tmp_path / "out", "--interrupt-at", "2", script=script)
    assert status == 3, text + errors
    assert "run 0: the command wrote a trace of 4 steps without a resume record for " \
           "--interrupt-at 2" in errors
    assert "--interrupt-at 2: the script told the recorder of no save at or after step 2 " \
           "(it ran 4 steps): call rec.saved(path) after its own save" in errors


@pytest.mark.parametrize("steps, words", [
    (["5", "6"], "--interrupt-at 5 and 6 fall on the same save of the script (after step 8)"),
    (["20"], "--interrupt-at 20: the save point after step 24 is the run's end"),
])
def test_interrupt_steps_without_a_save_point_of_their_own_fail_with_the_reason(tmp_path, steps,
                                                                               words, audit):
    options = [o for s in steps for o in ("--interrupt-at", s)]
    status, _, text, errors = audit(tmp_path / "out", *options, RESUME_ARG, script=MNIST)
    assert status == 3, text + errors
    assert words in errors


def test_saved_checks_its_argument_without_an_audit(tmp_path):
    torch = pytest.importorskip("torch")
    import repro_audit
    model = torch.nn.Linear(2, 2)
    with repro_audit.record(model) as rec:
        assert not rec.enabled
        with pytest.raises(TypeError, match="expected the path"):
            rec.saved(3)
        with pytest.raises(ValueError, match="no file there"):
            rec.saved(str(tmp_path / "missing.pt"))
        torch.save(model.state_dict(), tmp_path / "model.pt")
        rec.saved(tmp_path / "model.pt")  # a path-like: nothing happens
    with repro_audit.record(model, checkpoint=(print, print)) as rec:
        with pytest.raises(TypeError, match="use one or the other"):
            rec.saved(tmp_path / "model.pt")
    with pytest.raises(TypeError, match="state_dict"):
        repro_audit.record(model, scheduler=object())
    scheduler = torch.optim.lr_scheduler.StepLR(torch.optim.SGD(model.parameters(), lr=1), 1)
    with pytest.raises(TypeError, match="give the scheduler once"):
        repro_audit.record(model, scheduler=scheduler,
                           checkpoint=Checkpoint(print, print, scheduler=object.__new__(
                               type(scheduler))))


ROUND_TRIP = r"""
import os, torch, repro_audit
repro_audit.seed_everything(default=3)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
resume, start = os.environ.get("REPRO_AUDIT_RESUME_FROM"), 0
if resume:
    state = torch.load(resume)
    model.load_state_dict(state["model"]); optimizer.load_state_dict(state["optimizer"])
    torch.set_rng_state(state["rng"]); start = state["step"]
with repro_audit.record(model, optimizer) as rec:
    for step in range(start, 4):
        loss = model(torch.randn(3, 2)).square().sum()
        optimizer.zero_grad(); loss.backward(); optimizer.step()
        rec.step(loss=loss)
        folder = os.path.join(os.environ["REPRO_AUDIT_CHECKPOINT_DIR"], "sub dir")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "\u00e9tat-%d.pt" % (step + 1))
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "rng": torch.get_rng_state(), "step": step + 1}, path)
        rec.saved(path)
"""


def test_the_recorders_file_of_an_interrupt_is_read_back_by_its_reader(tmp_path,
                                                                      audit_environment):
    # Version 3, as the recorder writes it and its reader (the restarted recorder's) reads it:
    # the script's file by its name in the folder (a subfolder, a name beyond ASCII), its size and
    # digest, the step served and the steps done; then the restarted process takes it up.
    script = tmp_path / "train.py"
    script.write_text(ROUND_TRIP)
    folder = tmp_path / "run-001" / "checkpoints"
    folder.mkdir(parents=True)
    environment = audit_environment(REPRO_AUDIT_RUN="1",
                                    REPRO_AUDIT_TRACE=tmp_path / "run-001.trace.jsonl",
                                    REPRO_AUDIT_ID="0123456789abcdef0123456789abcdef",
                                    REPRO_AUDIT_INTERRUPT_AT="2", REPRO_AUDIT_CHECKPOINT_DIR=folder)
    first = subprocess.run([sys.executable, str(script)], env=environment, capture_output=True,
                           text=True, timeout=120)
    assert first.returncode == checkpoint.INTERRUPTED_EXIT, first.stderr
    state = folder / "checkpoint-step-2.recorder.json"

    class Recorder:
        _audit_id = environment["REPRO_AUDIT_ID"]
    saved = checkpoint._read_manifest(str(state), 1, 0, Recorder(), [2])
    pt = folder / "sub dir" / "\u00e9tat-2.pt"
    assert (saved["version"], saved["step"], saved["interrupt_at"]) == (3, 2, 2)
    assert saved["checkpoint"] == {"file": "sub dir/\u00e9tat-2.pt", "bytes": pt.stat().st_size,
                                   "xxh3": checkpoint._file_facts(str(pt))["xxh3"]}
    assert saved["records"]["step_count"] == 2
    environment.update(REPRO_AUDIT_RESUME_STATE=str(state), REPRO_AUDIT_RESUME_FROM=str(pt))
    second = subprocess.run([sys.executable, str(script)], env=environment, capture_output=True,
                            text=True, timeout=120)
    assert second.returncode == 0, second.stderr
    records = [json.loads(line) for line in (tmp_path / "run-001.trace.jsonl").open()]
    (resume,) = [r for r in records if r["record"] == "resume"]
    assert (resume["step"], resume["interrupt_at"], resume["resumed"]) == (2, 2, True)
    assert resume["checkpoint"] == {"bytes": pt.stat().st_size}
    assert [r["step"] for r in records if r["record"] == "step"] == [0, 1, 2, 3]
    # A file changed since the interrupt is refused when the run is taken up again.
    pt.write_bytes(pt.read_bytes() + b"x")
    third = subprocess.run([sys.executable, str(script)], env=environment, capture_output=True,
                           text=True, timeout=120)
    assert third.returncode != 0
    assert "is not the checkpoint the interrupted run wrote" in third.stderr


# -- checkpoint functions: the recorder saves and loads --


def test_the_checkpointing_example_resumes_exactly(tmp_path, audit):
    status, report, text, errors = audit(tmp_path / "out", "--interrupt-at", "12",
                                         "--interrupt-at", "5")
    assert status == 0, text + errors
    resumes = report["resumes"]
    assert [(r["run"], r["step"], r["exact"]) for r in resumes] == [(1, 5, True), (1, 12, True)]
    assert all(r["differing"] == [] and r["first_divergence"] is None for r in resumes)
    assert all(r["checkpoint"]["by"] == "script" and r["checkpoint"]["bytes"] > 0
               for r in resumes)
    assert all(r["interrupt_at"] == r["step"] for r in resumes)
    assert "resume of run 1 at step 5: exact" in text
    assert "the script's save took" in text
    assert checkpoints(tmp_path / "out", 1) == [
        "checkpoint-step-12.pt", "checkpoint-step-12.recorder.json", "checkpoint-step-5.pt",
        "checkpoint-step-5.recorder.json"]
    assert checkpoints(tmp_path / "out", 0) == []  # never stopped


def test_the_checkpointing_example_runs_under_different_seeds(tmp_path, audit):
    """exec --seeds different gives 64-bit seeds: the example's sampler overflowed a generator's
    seed with them (issue 61)."""
    status, report, text, errors = audit(tmp_path / "out", "--seeds", "different",
                                         "--interrupt-at", "5")
    assert status == 0, text + errors
    assert "DIFFERENT SEEDS ONLY (2 runs)" in text
    assert "resumes" not in report  # runs of other seeds are no resumption of run 0


def test_the_buggy_example_is_diagnosed_with_both_causes(tmp_path, audit):
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
def test_each_piece_left_out_is_named_alone(tmp_path, forget, piece, words, audit):
    status, report, text, errors = audit(tmp_path / "out", "--interrupt-at", "5",
                                         script_args=["--forget", forget])
    assert status == 1, text + errors
    (resume,) = report["resumes"]
    assert resume["differing"] == [piece]
    assert words in text


def test_a_step_the_run_never_passes_fails_the_run(tmp_path, audit):
    script = tmp_path / "train.py"
    script.write_text(NEVER_SAVED.replace("record(model, optimizer)",
                                          "record(model, optimizer, checkpoint=(print, print))"))
    status, _, text, errors = audit(tmp_path / "out", "--interrupt-at", "10", script=script)
    assert status == 3, text + errors
    assert ("run 0: the command wrote a trace of 4 steps without a resume record for "
            "--interrupt-at 10") in errors


def test_interrupts_do_not_combine_with_op_records_yet(tmp_path, audit):
    status, _, text, errors = audit(tmp_path / "out", "--interrupt-at", "5", "--trace-ops", "0")
    assert status == 2, text + errors
    assert "--interrupt-at does not combine with --trace-ops or --keep-op yet" in errors


@pytest.mark.parametrize("where, script, options, step", [
    ("checkpoint", EXAMPLE, (), 5), ("restore", EXAMPLE, (), 5),
    ("checkpoint", MNIST, (RESUME_ARG,), 8),
])
def test_a_kill_during_the_interrupt_leaves_an_audit_that_resume_finishes(tmp_path, where, script,
                                                                         options, step, audit):
    out = tmp_path / "out"
    status, _, text, errors = audit(out, "--interrupt-at", "5", *options, script=script,
                                    REPRO_AUDIT_TEST_KILL_AT=where)
    assert status == 3, text + errors
    assert "killed by signal 9" in errors
    assert not (out / "run-001.trace.jsonl").exists()
    assert checkpoints(out, 1)  # the killed run's files, left for --resume to remove
    status, report, text, errors = audit(out, "--interrupt-at", "5", *options, "--resume",
                                         script=script)
    assert status == 0, text + errors
    assert [(r["run"], r["step"], r["exact"]) for r in report["resumes"]] == [(1, step, True)]
    assert not [p.name for p in out.iterdir() if ".tmp-" in p.name]  # the killed one's, gone


# The checkpointing example, with its run folder written by someone else between the interrupt
# and the restart: the recorder's file then names, as the trace's temporary, a file outside the
# audit folder (what version 1 of the file held, and the restarted recorder appended to and
# renamed over the trace).
REDIRECTED = r"""
import json, os, runpy, sys
resume = os.environ.get("REPRO_AUDIT_RESUME_STATE")
if resume:
    with open(resume) as f:
        saved = json.load(f)
    saved["records"]["temporary"] = os.environ["VICTIM"]
    with open(resume, "w") as f:
        json.dump(saved, f)
sys.argv = [os.environ["EXAMPLE"]]
runpy.run_path(os.environ["EXAMPLE"], run_name="__main__")
"""


def test_a_recorder_file_naming_a_trace_outside_the_folder_is_refused(tmp_path, audit):
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


# Two ranks under repro_audit.launch, which lets every rank reach its save and exits 75 when all
# did (torchrun stops the other ranks when one exits non-zero, and fails).
DDP_TRAIN = os.path.join(ROOT, "tests", "python", "scripts", "ddp_train.py")
LAUNCH_TWO = [sys.executable, "-m", "repro_audit.launch", "2", DDP_TRAIN]


@pytest.mark.parametrize("mode, options", [("1", ()), ("saved", (RESUME_ARG,))])
def test_each_rank_of_a_data_parallel_run_resumes_from_its_own_files(
        tmp_path, mode, options, audit):
    # CHECKPOINT=1: the recorder saves and loads through the script's functions; "saved": each
    # rank saves with its own code and calls rec.saved, and resumes with --resume FILE (rank 0's
    # file, from which each rank derives its own).
    pytest.importorskip("torch.distributed")
    out = tmp_path / "out"
    status, report, text, errors = audit(out, "--interrupt-at", "2", *options,
                                         command=LAUNCH_TWO, CHECKPOINT=mode, STEPS="4")
    assert status == 0, text + errors
    assert [(r["run"], r["step"], r["exact"]) for r in report["resumes"]] == [(1, 2, True)]
    # Rank 0 keeps the run's names (exec looks for its recorder's file); rank 1 its own.
    assert checkpoints(out, 1) == sorted(
        ["checkpoint-step-2.pt", "checkpoint-step-2.rank-1.pt",
         "checkpoint-step-2.rank-1.recorder.json", "checkpoint-step-2.recorder.json"]
        if mode == "1" else  # each rank's own save, every 2 steps
        ["checkpoint-step-2.rank-1.recorder.json", "checkpoint-step-2.recorder.json",
         "rank-0.step-2.pt", "rank-1.step-2.pt", "rank-0.step-4.pt", "rank-1.step-4.pt"])
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
        with pytest.raises(ValueError, match="REPRO_AUDIT_RESUME_STATE"):
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
    assert settings.parse_steps("") == []
    assert settings.parse_steps("12,5,5") == [5, 12]
    for text in ("0", "-1", "5,x", "1e3", " 5"):
        with pytest.raises(ValueError, match="REPRO_AUDIT_INTERRUPT_AT"):
            settings.parse_steps(text)
