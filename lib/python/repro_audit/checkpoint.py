"""Resumed equals uninterrupted, for a script's own save and load (docs/resume.md, "PyTorch").

    def save(path):
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "torch_rng": torch.get_rng_state(), ...}, path)

    def load(path):
        state = torch.load(path)
        model.load_state_dict(state["model"]); ...

    with repro_audit.record(model, optimizer, checkpoint=(save, load)) as rec:
        for epoch in range(rec.start_step // steps_per_epoch, epochs): ...

`repro-audit exec --interrupt-at STEP` gives every run REPRO_AUDIT_INTERRUPT_AT ("20,50"). Run 0
is never interrupted: as it passes each STEP (after STEP steps) it records the digests of its
state. Every other run stops there: the recorder calls `save(path)` with
run-NNN/checkpoint-step-STEP.pt, writes checkpoint-step-STEP.recorder.json beside it (its trace so
far, the time save took, the .pt file's size and digest) and ends the process with exit status
INTERRUPTED_EXIT. exec starts the same command again with REPRO_AUDIT_RESUME_FROM naming that
file: the recorder calls `load(path)`, digests the state it restored, and appends to the same
trace, whose `resume` record (docs/trace-format.md) holds the same digests as run 0's, written
before the first step after the resume with the digest of that step's batch. The report compares
them piece by piece and words each difference as the fix. In a data-parallel run each rank has
its own files: rank r's names carry ".rank-R" (checkpoint-step-STEP.rank-R.pt and .recorder.json),
rank 0's are the run's, and every rank resumes from its own file of the step exec names.
"""
import json
import os
import re
import signal
import sys
import time

from . import digest as digests
from . import workers
from .state import value_digest
from .trace import write_whole, TraceRecords

INTERRUPTED_EXIT = 75  # EX_TEMPFAIL; exec's kInterruptedExit (lib/audit/exec_audit.h)
# Version 2: the trace's temporary is no longer named in the file (parked_temporary derives it).
FORMAT, VERSION = "repro_audit python checkpoint", 2
INTERRUPT_AT = "REPRO_AUDIT_INTERRUPT_AT"
CHECKPOINT_DIR = "REPRO_AUDIT_CHECKPOINT_DIR"
RESUME_FROM = "REPRO_AUDIT_RESUME_FROM"
# Testing only: "checkpoint" kills the process (SIGKILL) right after the script's save, before
# the recorder's file is written; "restore" right after the script's load.
TEST_KILL_AT = "REPRO_AUDIT_TEST_KILL_AT"


class Checkpoint:
    """The script's checkpoint: `save(path)` writes everything a resume needs to the file `path`,
    `load(path)` restores it (what it returns is the recorder's `restored`). `scheduler` and
    `scaler`, the LR scheduler and the GradScaler the script steps, when it has them: their
    state_dict is part of the state compared at a resume."""

    def __init__(self, save, load, scheduler=None, scaler=None):
        if not callable(save) or not callable(load):
            raise TypeError("repro_audit: checkpoint=(save, load): two functions, save(path) and "
                            f"load(path); got {save!r} and {load!r}")
        for name, value in (("scheduler", scheduler), ("scaler", scaler)):
            if value is not None and not callable(getattr(value, "state_dict", None)):
                raise TypeError(f"repro_audit: Checkpoint({name}={value!r}): expected an object "
                                "with a state_dict()")
        self.save, self.load, self.scheduler, self.scaler = save, load, scheduler, scaler


def checkpoint_of(value):
    """A Checkpoint from the recorder's `checkpoint=`: None, a Checkpoint, or (save, load)."""
    if value is None or isinstance(value, Checkpoint):
        return value
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return Checkpoint(*value)
    raise TypeError(f"repro_audit: checkpoint={value!r}: expected (save, load) or "
                    "repro_audit.Checkpoint(save, load, scheduler=..., scaler=...)")


def parse_steps(text):
    """REPRO_AUDIT_INTERRUPT_AT's steps, ascending ("" for none); ValueError naming it."""
    if not text:
        return []
    try:
        steps = [int(part) for part in text.split(",")]
    except ValueError:
        steps = [0]
    if any(s < 1 for s in steps) or not all(p.isdigit() for p in text.split(",")):
        raise ValueError(f"repro_audit: {INTERRUPT_AT}={text!r}: expected steps >= 1, "
                         "comma-separated")
    return sorted(set(steps))


def state_digests(torch, model_state, optimizer, checkpoint):
    """The resume record's `state` but `next_batch` (docs/trace-format.md "resume"), now."""
    _, optimizer_values = model_state.optimizer_state()
    groups = ([{k: v for k, v in g.items() if k != "params"} for g in optimizer.param_groups]
              if optimizer is not None else [])
    streams = workers.host_rng_states(torch)
    if torch.cuda.is_available():
        streams["cuda"] = digests.digest_of_digests(
            [digests.tensor_digest(s) for s in torch.cuda.get_rng_state_all()])
    state = {"weights": digests.digest_of_digests(model_state.weights()),
             "buffers": digests.digest_of_digests(model_state.buffers()),
             "optimizer_state": digests.digest_of_digests(optimizer_values),
             "schedule": value_digest(torch, groups),
             "rng_streams": streams}
    for name, owner in (("lr_scheduler", checkpoint.scheduler),
                        ("grad_scaler", checkpoint.scaler)):
        if owner is not None:
            state[name] = value_digest(torch, owner.state_dict())
    return state


def batch_digest(tensors, indices):
    """The digest of a step's batch: its indices (when given), inputs and labels."""
    parts = [digests.tensor_digest(t) for t in tensors]
    if indices is not None:
        parts.insert(0, digests.tensor_digest(indices))
    return digests.digest_of_digests(parts)


def _kill_for_test(environ, where):
    if environ.get(TEST_KILL_AT) == where:
        sys.stdout.flush()
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)


class Interrupts:
    """The recorder's side of exec --interrupt-at for one process of one run."""

    def __init__(self, torch, checkpoint, steps, run, folder, resume_from, environ, rank=0):
        self._torch, self._checkpoint, self._steps = torch, checkpoint, steps
        self._run, self._folder, self._resume_from = run, folder, resume_from
        self._rank = rank  # of a data-parallel run (distributed.py); 0 for one process
        self._environ = environ
        self._pending = None  # (resume record, epoch) waiting for the next step's batch

    @classmethod
    def from_env(cls, torch, checkpoint, run, environ=os.environ, rank=0):
        """None unless the audit asks for interrupts; ValueError when it does and the script gave
        no checkpoint functions (no silent no-op: the run fails, and exec says why). `rank`: this
        process's in a data-parallel run (the recorder's Placement), whose files it names."""
        steps = parse_steps(environ.get(INTERRUPT_AT, ""))
        if not steps:
            return None
        if checkpoint is None:
            raise ValueError(
                f"repro_audit: the audit interrupts runs after step {steps[0]} (exec "
                "--interrupt-at), but the recorder was given no checkpoint functions: pass "
                "checkpoint=(save, load) to repro_audit.record or Recorder.from_env "
                "(docs/resume.md, \"PyTorch\")")
        folder = environ.get(CHECKPOINT_DIR)
        if not folder or not os.path.isdir(folder):
            raise ValueError(f"repro_audit: {CHECKPOINT_DIR}={folder!r}: expected the run's "
                             "folder")
        return cls(torch, checkpoint, steps, run, folder, environ.get(RESUME_FROM) or None,
                   environ, rank)

    def _name(self, step, suffix):
        """This rank's file of the interrupt after `step`: rank 0's (and a single process's) keeps
        the run's name, which exec looks for; rank r's has ".rank-R" before the suffix, so that
        the ranks of one run never write or read each other's."""
        rank = ".rank-%d" % self._rank if self._rank else ""
        return os.path.join(self._folder, "checkpoint-step-%d%s%s" % (step, rank, suffix))

    def _resume_file(self):
        """This rank's recorder's file for the step REPRO_AUDIT_RESUME_FROM names: exec names rank
        0's (the run's) file of the step, every rank reads its own of that step."""
        match = re.fullmatch(r"checkpoint-step-(\d{1,18})\.recorder\.json",
                             os.path.basename(self._resume_from))
        if (match is None or int(match.group(1)) not in self._steps or
                os.path.abspath(os.path.dirname(self._resume_from)) !=
                os.path.abspath(self._folder)):
            raise ValueError(f"repro_audit: {RESUME_FROM}={self._resume_from!r}: expected "
                             f"checkpoint-step-STEP.recorder.json in {CHECKPOINT_DIR} "
                             f"({self._folder!r}), STEP one of {INTERRUPT_AT}'s {self._steps}")
        return self._name(int(match.group(1)), ".recorder.json")

    # -- the recorder's hooks (recorder.py) --

    def begin(self, recorder):
        """At the recorder's start: in a process started again after an interrupt, the script's
        load, the trace so far taken up, and the resume record made (written at the next step)."""
        recorder.start_step, recorder.restored = 0, None
        if self._resume_from is None:
            return
        saved = _read_manifest(self._resume_file(), self._run, self._rank, recorder, self._steps)
        step = saved["step"]
        pt = self._name(step, ".pt")
        _check_file(pt, saved["checkpoint"])
        started = time.perf_counter()
        recorder.restored = self._checkpoint.load(pt)
        read_seconds = time.perf_counter() - started
        _kill_for_test(self._environ, "restore")
        recorder._records = TraceRecords.resumed(saved["records"], recorder._path,
                                                 parked_temporary(recorder._path, step))
        kept = saved["recorder"]
        recorder._epoch_batches = {int(e): n for e, n in kept["epoch_batches"].items()}
        recorder._recording += kept["recording_seconds"]
        recorder._warnings = kept["warnings"]
        now = time.perf_counter()
        recorder._started, recorder._last = now - kept["elapsed_seconds"], now
        if kept["loader_workers"]:
            with open(workers.side_file(recorder._path), "a", encoding="utf-8") as f:
                f.write(kept["loader_workers"])
        recorder.start_step = step
        record = self._record(recorder, step, True)
        record["checkpoint"] = {"bytes": saved["checkpoint"]["bytes"],
                                "write_seconds": saved["checkpoint"]["write_seconds"],
                                "read_seconds": read_seconds}
        self._pending = record

    def before_step(self, recorder, tensors, indices, epoch):
        """At a step's record, the earlier steps' in the trace: the resume record waiting for this
        step's batch, before it."""
        if self._pending is None:
            return
        record, self._pending = self._pending, None
        record["state"]["next_batch"] = batch_digest(tensors, indices)
        recorder._records.add_resume(record, epoch)

    def after_step(self, recorder, steps_done):
        """After the step that makes `steps_done` steps: run 0 records its state at each of the
        audit's steps; any other run stops at the next one after the step it started from."""
        if steps_done not in self._steps or steps_done <= recorder.start_step:
            return
        if self._run == 0:
            self._pending = self._record(recorder, steps_done, False)
            return
        self._interrupt(recorder, steps_done)

    # -- the pieces --

    def _record(self, recorder, step, resumed):
        return {"record": "resume", "step": step, "resumed": resumed,
                "state": state_digests(self._torch, recorder._state, recorder._optimizer,
                                       self._checkpoint)}

    def _interrupt(self, recorder, step):
        """The script's save, the recorder's file, and the end of the process."""
        recorder._settle()
        pt = self._name(step, ".pt")
        started = time.perf_counter()
        self._checkpoint.save(pt)
        write_seconds = time.perf_counter() - started
        if not os.path.isfile(pt):
            raise RuntimeError(f"repro_audit: the script's save({pt!r}) wrote no file there "
                               "(docs/resume.md, \"PyTorch\")")
        _kill_for_test(self._environ, "checkpoint")
        side = workers.side_file(recorder._path)
        loader_workers = ""
        if os.path.exists(side):
            with open(side, encoding="utf-8") as f:
                loader_workers = f.read()
        manifest = {
            "format": FORMAT, "version": VERSION, "step": step, "run": self._run,
            "rank": self._rank,
            "audit_id": recorder._audit_id,
            "checkpoint": dict(_file_facts(pt), write_seconds=write_seconds),
            "records": recorder._records.suspend(parked_temporary(recorder._path, step)),
            "recorder": {"epoch_batches": {str(e): n for e, n in recorder._epoch_batches.items()},
                         "recording_seconds": recorder._recording,
                         "elapsed_seconds": time.perf_counter() - recorder._started,
                         "warnings": recorder._warnings, "loader_workers": loader_workers},
        }
        write_whole(self._name(step, ".recorder.json"), json.dumps(manifest))
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(INTERRUPTED_EXIT)  # no exit hooks: the trace goes on in the next process


def parked_temporary(trace: str, step: int) -> str:
    """Where an interrupted run's trace waits for the next process: "<trace>.tmp-0-<step>",
    derived from the trace's name and the step, never read from the folder (a name read there
    could send the records, and the rename over the trace, to any file the user can write).
    Beside the trace, so the rename at the end stays in its folder; pid 0 is no process's, so no
    live writer's temporary has the name, and the audit folder knows it for the trace's debris
    (lib/rundir/audit_folder.cpp atomic_write_target), which `exec --resume` removes."""
    return "%s.tmp-0-%d" % (trace, step)


def _file_facts(path):
    with open(path, "rb") as f:
        data = f.read()
    return {"file": os.path.basename(path), "bytes": len(data),
            "xxh3": digests.digest_bytes(digests.U8, (len(data),), data)}


def _check_file(path, expected):
    """ValueError unless `path` is the file the recorder's file names (size and digest)."""
    try:
        facts = _file_facts(path)
    except OSError as e:
        raise ValueError(f"repro_audit: the checkpoint {path} cannot be read: {e}") from None
    if facts["bytes"] != expected["bytes"] or facts["xxh3"] != expected["xxh3"]:
        raise ValueError(f"repro_audit: {path} is not the checkpoint the interrupted run wrote "
                         f"({facts['bytes']} bytes, not {expected['bytes']}, or another digest)")


def _read_manifest(path: str, run: int, rank: int, recorder, steps: list) -> dict:
    """The recorder's file of an interrupt, checked: its format, run, rank, audit and step (one of
    the audit's), and that it names no file (which version 1 did)."""
    try:
        with open(path, encoding="utf-8") as f:
            saved = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError(f"repro_audit: {RESUME_FROM}={path!r}: cannot be read: {e}") from None
    if not isinstance(saved, dict) or saved.get("format") != FORMAT:
        raise ValueError(f"repro_audit: {path} is no repro_audit checkpoint")
    if saved.get("version") != VERSION:
        raise ValueError(f"repro_audit: {path}: version {saved.get('version')!r}, this recorder "
                         f"reads version {VERSION}")
    if saved.get("run") != run or saved.get("audit_id") != recorder._audit_id:
        raise ValueError(f"repro_audit: {path} is another run's or another audit's checkpoint")
    if saved.get("rank") != rank:
        raise ValueError(f"repro_audit: {path} is rank {saved.get('rank')!r}'s checkpoint, not "
                         f"rank {rank}'s")
    step = saved.get("step")
    if type(step) is not int or step not in steps:
        raise ValueError(f"repro_audit: {path}: step {step!r} is none of the audit's "
                         f"{INTERRUPT_AT} steps {steps}")
    records = saved.get("records")
    if not isinstance(records, dict) or "temporary" in records:
        named = records.get("temporary") if isinstance(records, dict) else None
        raise ValueError(f"repro_audit: {path}: refused: it names a file for the trace "
                         f"({named!r}), which this recorder never writes there nor reads: the "
                         "trace's temporary is derived from the trace's name and the step")
    return saved
