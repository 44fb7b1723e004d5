"""Resumed equals uninterrupted, for a script's own save and load (docs/resume.md, "PyTorch").

The script saves where and when it does (an epoch's end, after its evaluation and its
scheduler.step()), resumes as it does (its own `--resume FILE`, or REPRO_AUDIT_RESUME_FROM), and
tells the recorder of each save with one call:

    with repro_audit.record(model, optimizer, scheduler=scheduler) as rec:
        for epoch in range(start_epoch, epochs):
            train(...)                                       # rec.step(...) after each batch
            test(...); scheduler.step()
            path = os.path.join(checkpoint_dir, f"epoch-{epoch}.pt")
            torch.save({...}, path)                          # the script's own save
            rec.saved(path)

`repro-audit exec --interrupt-at S` gives every run REPRO_AUDIT_INTERRUPT_AT ("5,12") and
REPRO_AUDIT_CHECKPOINT_DIR (the run's checkpoints/ folder, where the script saves). The first
rec.saved(path) at or after step S is S's save point. A run but run 0 ends there: the recorder
writes checkpoint-step-S.recorder.json beside the script's file (the trace so far, the file's name
in the folder, size and digest) and ends the process with exit status INTERRUPTED_EXIT; exec
starts the command again, with the script's resume argument (exec --resume-arg) and
REPRO_AUDIT_RESUME_FROM naming the script's file, REPRO_AUDIT_RESUME_STATE the recorder's: the
recorder takes up the trace, the script loads its file. Run 0 goes on past the save point. Both
digest their state at the same logical point: just before the model's first forward pass with
gradients enabled after the save point (a forward pre-hook: after the DataLoader's iterator drew
its seeds, before BatchNorm updates its statistics; an evaluation under torch.no_grad() is no such
pass), and write it in a `resume` record (docs/trace-format.md) before the step's record, with
the digest of that step's batch. The report compares them piece by piece and words each
difference as the fix.

`Checkpoint(save, load)` (checkpoint=(save, load)) is the same protocol with the recorder as the
script: it calls save(run's folder/checkpoint-step-S.pt) at the end of the S-th rec.step() and
marks that file saved, and calls load(path) when the recorder of a resumed process starts.

In a data-parallel run each rank has its own recorder's file: rank r's name carries ".rank-R"
(checkpoint-step-S.rank-R.recorder.json, and the Checkpoint's .pt), rank 0's is the run's, and
every rank resumes from its own file of the interrupt exec names.
"""
from typing import Any, Callable, Dict, List, Optional, Protocol
import json
import os
import re
import signal
import sys
import time

from . import digest as digests
from . import distributed
from . import settings
from . import workers
from .state import value_digest
from .trace import write_whole, TraceRecords

INTERRUPTED_EXIT = 75  # EX_TEMPFAIL; exec's kInterruptedExit (lib/audit/exec_audit.h)
# Version 2: the trace's temporary is no longer named in the file (parked_temporary derives it).
# Version 3: the save point is the script's (rec.saved): `interrupt_at`, the step S it serves,
# and `step`, the steps done at the save (S or later); `checkpoint.file` the script's file, by its
# name in the checkpoint folder; `write_seconds` only when the recorder called the save.
FORMAT, VERSION = "repro_audit python checkpoint", 3
# The variables of the protocol (read in settings.py): the steps, the run's checkpoint folder,
# the script's file to resume from (exec sets it) and the recorder's file of that interrupt.
INTERRUPT_AT, CHECKPOINT_DIR = settings.INTERRUPT_AT, settings.CHECKPOINT_DIR
RESUME_FROM, RESUME_STATE = settings.RESUME_FROM, settings.RESUME_STATE
# Testing only: "checkpoint" kills the process (SIGKILL) at the save point, after the script's
# file is written and before the recorder's; "restore" when the recorder of the restarted process
# has checked the script's file (and called the Checkpoint's load), before it takes the trace up.
TEST_KILL_AT = settings.TEST_KILL_AT
DOCS = "docs/resume.md, \"PyTorch\""


class Stateful(Protocol):
    """What the resume check compares of an LR scheduler or a GradScaler: its state_dict()."""

    def state_dict(self) -> Dict[str, Any]: ...


class Checkpoint:
    """The script's checkpoint functions, for a recorder that saves and loads through them:
    `save(path)` writes everything a resume needs to the file `path`, `load(path)` restores it
    (what it returns is the recorder's `restored`). `scheduler` and `scaler`, the LR scheduler
    and the GradScaler the script steps, when it has them: their state_dict is part of the state
    compared at a resume (repro_audit.record takes them too). A script that saves with its own
    code calls rec.saved(path) instead (docs/resume.md)."""

    def __init__(self, save: Callable[[str], object], load: Callable[[str], object],
                 scheduler: Optional[Stateful] = None, scaler: Optional[Stateful] = None) -> None:
        if not callable(save) or not callable(load):
            raise TypeError("repro_audit: checkpoint=(save, load): two functions, save(path) and "
                            f"load(path); got {save!r} and {load!r}")
        check_stateful(scheduler=scheduler, scaler=scaler)
        self.save, self.load, self.scheduler, self.scaler = save, load, scheduler, scaler


def check_stateful(**objects: Any) -> None:
    """TypeError for a scheduler or scaler without a state_dict() (None is none)."""
    for name, value in objects.items():
        if value is not None and not callable(getattr(value, "state_dict", None)):
            raise TypeError(f"repro_audit: {name}={value!r}: expected an object with a "
                            "state_dict()")


def checkpoint_of(value: Any) -> Any:
    """A Checkpoint from the recorder's `checkpoint=`: None, a Checkpoint, or (save, load)."""
    if value is None or isinstance(value, Checkpoint):
        return value
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return Checkpoint(*value)
    raise TypeError(f"repro_audit: checkpoint={value!r}: expected (save, load) or "
                    "repro_audit.Checkpoint(save, load, scheduler=..., scaler=...)")


def stateful_of(checkpoint: Any, scheduler: Any, scaler: Any) -> Any:
    """The scheduler and scaler whose state is compared: record()'s, else the Checkpoint's;
    TypeError when both name one and not the same."""
    check_stateful(scheduler=scheduler, scaler=scaler)
    pair = []
    for name, given in (("scheduler", scheduler), ("scaler", scaler)):
        other = getattr(checkpoint, name, None)
        if given is not None and other is not None and given is not other:
            raise TypeError(f"repro_audit: record({name}=...) and Checkpoint({name}=...) name two "
                            f"objects: give the {name} once")
        pair.append(given if given is not None else other)
    return tuple(pair)


def check_saved_path(path: Any, checkpoint: Any = None) -> Any:
    """The path rec.saved() was given, as a str: TypeError unless a path, ValueError unless the
    file is there; TypeError when the recorder saves through checkpoint functions itself."""
    if checkpoint is not None:
        raise TypeError("repro_audit: rec.saved(): this recorder saves through its "
                        "checkpoint=(save, load) functions; rec.saved(path) is for a script that "
                        "saves with its own code: use one or the other (" + DOCS + ")")
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"repro_audit: rec.saved({path!r}): expected the path (str or "
                        "os.PathLike) of the file the script just saved")
    path = os.fspath(path)
    if not isinstance(path, str) or not os.path.isfile(path):
        raise ValueError(f"repro_audit: rec.saved({path!r}): no file there: call it after the "
                         "script's save has written the file it resumes from")
    return path


def state_digests(torch: Any, model_state: Any, optimizer: Any, scheduler: Any = None,
                  scaler: Any = None) -> Any:
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
    for name, owner in (("lr_scheduler", scheduler), ("grad_scaler", scaler)):
        if owner is not None:
            state[name] = value_digest(torch, owner.state_dict())
    return state


def batch_digest(tensors: Any, indices: Any) -> Any:
    """The digest of a step's batch: its indices (when given), inputs and labels."""
    parts = [digests.tensor_digest(t) for t in tensors]
    if indices is not None:
        parts.insert(0, digests.tensor_digest(indices))
    return digests.digest_of_digests(parts)


def _kill_for_test(kill_at: Any, where: Any) -> None:
    if kill_at == where:
        sys.stdout.flush()
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)


class Interrupts:
    """The recorder's side of exec --interrupt-at for one process of one run."""

    def __init__(self, torch: Any, checkpoint: Any, steps: Any, run: Any, folder: Any,
                 resume_state: Any, kill_at: Any, rank: Any = 0,
                 scheduler: Any = None, scaler: Any = None) -> None:
        self._torch, self._checkpoint, self._steps = torch, checkpoint, steps
        self._run, self._folder, self._resume_state = run, folder, resume_state
        self._rank = rank  # of a data-parallel run (distributed.py); 0 for one process
        self._scheduler, self._scaler = scheduler, scaler
        self._kill_at = kill_at  # REPRO_AUDIT_TEST_KILL_AT: where the tests SIGKILL the run
        self._served: Any = set()  # the steps S whose save point this run has passed
        # A save point's resume record without its state: digested at the compare point, the
        # model's next forward pass with gradients enabled.
        self._armed: Any = None
        self._pending = None  # the resume record, waiting for the next step's batch
        self._recorder: Any = None

    @classmethod
    def from_settings(cls, torch: Any, checkpoint: Any, given: Any, rank: Any = 0,
                      scheduler: Any = None,
                 scaler: Any = None) -> Any:
        """None unless the audit asks for interrupts. `rank`: this process's in a data-parallel
        run (the recorder's Placement), whose files it names."""
        steps = list(given.interrupt_at)
        if not steps:
            return None
        folder = given.checkpoint_dir
        if not folder or not os.path.isdir(folder):
            raise ValueError(f"repro_audit: {CHECKPOINT_DIR}={folder!r}: expected the run's "
                             "checkpoint folder")
        return cls(torch, checkpoint, steps, given.run, folder, given.resume_state,
                   given.test_kill_at, rank, scheduler, scaler)

    def _name(self, step: Any, suffix: Any) -> Any:
        """This rank's file of the interrupt at `step`: rank 0's (and a single process's) keeps
        the run's name, which exec looks for; rank r's has ".rank-R" before the suffix, so that
        the ranks of one run never write or read each other's."""
        rank = ".rank-%d" % self._rank if self._rank else ""
        return os.path.join(self._folder, "checkpoint-step-%d%s%s" % (step, rank, suffix))

    def _resume_file(self) -> Any:
        """This rank's recorder's file for the interrupt REPRO_AUDIT_RESUME_STATE names: exec
        names rank 0's (the run's) file, every rank reads its own of that interrupt."""
        match = re.fullmatch(r"checkpoint-step-(\d{1,18})\.recorder\.json",
                             os.path.basename(self._resume_state))
        if (match is None or int(match.group(1)) not in self._steps or
                os.path.abspath(os.path.dirname(self._resume_state)) !=
                os.path.abspath(self._folder)):
            raise ValueError(f"repro_audit: {RESUME_STATE}={self._resume_state!r}: expected "
                             f"checkpoint-step-STEP.recorder.json in {CHECKPOINT_DIR} "
                             f"({self._folder!r}), STEP one of {INTERRUPT_AT}'s {self._steps}")
        return self._name(int(match.group(1)), ".recorder.json")

    def _relative(self, path: Any) -> Any:
        """`path`'s name in the checkpoint folder, links resolved ("epoch-1.pt", "sub/x.pt");
        ValueError when the file is outside it: exec resumes only from a file in the folder."""
        folder = os.path.realpath(self._folder)
        relative = os.path.relpath(os.path.realpath(path), folder)
        if relative == os.curdir or relative.split(os.sep)[0] == os.pardir:
            raise ValueError(
                f"repro_audit: rec.saved({path!r}): the file is outside the run's checkpoint "
                f"folder {self._folder} ({CHECKPOINT_DIR}): the audit resumes a run only from a "
                f"file in it; save under os.environ[{CHECKPOINT_DIR!r}] ({DOCS})")
        return relative.replace(os.sep, "/")

    def _inside(self, relative: Any) -> Any:
        """The path of `relative`, a name the recorder's file gives, in the checkpoint folder;
        ValueError for a name that could leave it."""
        parts = relative.split("/") if isinstance(relative, str) else [""]
        if relative.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise ValueError(f"repro_audit: the checkpoint's name {relative!r} is not a name in "
                             f"the checkpoint folder {self._folder}")
        path = os.path.join(self._folder, *parts)
        if self._relative(path) != relative:  # a link on the way: refused, as exec refuses it
            raise ValueError(f"repro_audit: the checkpoint {path} goes through a link")
        return path

    # -- the recorder's hooks (recorder.py) --

    def begin(self, recorder: Any) -> None:
        """At the recorder's start: the compare point's hook on the model; in a process started
        again after an interrupt, the recorder's file read, the script's file checked, the
        Checkpoint's load, and the trace so far taken up."""
        self._recorder = recorder
        recorder.start_step, recorder.restored = 0, None
        distributed.unwrapped(recorder._model).register_forward_pre_hook(self._before_forward)
        if self._resume_state is None:
            return
        saved = _read_manifest(self._resume_file(), self._run, self._rank, recorder, self._steps)
        step, interrupt_at = saved["step"], saved["interrupt_at"]
        path = self._inside(saved["checkpoint"]["file"])
        _check_file(path, saved["checkpoint"])
        checkpoint = {"bytes": saved["checkpoint"]["bytes"]}
        if self._checkpoint is not None:
            started = time.perf_counter()
            recorder.restored = self._checkpoint.load(path)
            checkpoint["read_seconds"] = time.perf_counter() - started
            checkpoint["write_seconds"] = saved["checkpoint"].get("write_seconds", 0.0)
        _kill_for_test(self._kill_at, "restore")
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
        self._served = {s for s in self._steps if s <= step}
        self._armed = {"record": "resume", "step": step, "interrupt_at": interrupt_at,
                       "resumed": True, "checkpoint": checkpoint}

    def _before_forward(self, module: Any, inputs: Any) -> Any:
        """The compare point: the model's first forward pass with gradients enabled after a save
        point (run 0) or a resume (the resumed run)."""
        if self._armed is None or not self._torch.is_grad_enabled():
            return None
        record, self._armed = self._armed, None
        record["state"] = state_digests(self._torch, self._recorder._state,
                                        self._recorder._optimizer, self._scheduler, self._scaler)
        self._pending = record
        return None

    def before_step(self, recorder: Any, tensors: Any, indices: Any, epoch: Any) -> None:
        """At a step's record, the earlier steps' in the trace: the resume record waiting for this
        step's batch, before it."""
        if self._armed is not None:
            raise RuntimeError(
                "repro_audit: the model given to repro_audit.record ran no forward pass with "
                f"gradients enabled between the save point after step {self._armed['step']} "
                f"(--interrupt-at {self._armed['interrupt_at']}) and the next rec.step(): the "
                "resume check compares the state just before that pass; is the model recorded "
                f"the one the script trains? ({DOCS})")
        if self._pending is None:
            return
        record, self._pending = self._pending, None
        record["state"]["next_batch"] = batch_digest(tensors, indices)
        recorder._records.add_resume(record, epoch)

    def after_step(self, recorder: Any, steps_done: Any) -> None:
        """After the step that makes `steps_done` steps: with Checkpoint functions, the recorder
        is the script that saves at the end of the S-th step."""
        if self._checkpoint is None:
            return
        due = self._due(steps_done)
        if not due:
            return
        if self._run == 0:
            self._arm(steps_done, due)
            return
        path = self._name(due[0], ".pt")
        started = time.perf_counter()
        self._checkpoint.save(path)
        write_seconds = time.perf_counter() - started
        if not os.path.isfile(path):
            raise RuntimeError(f"repro_audit: the script's save({path!r}) wrote no file there "
                               f"({DOCS})")
        self._interrupt(recorder, steps_done, due, path, write_seconds)

    def saved(self, recorder: Any, path: Any) -> None:
        """rec.saved(path), the script's file just saved after `steps_done` steps: the save point
        of the audit's next step S when it is at or after S."""
        relative = self._relative(path)  # every save under an audit: a wrong folder fails early
        steps_done = recorder._steps_done()
        due = self._due(steps_done)
        if not due:
            return
        if self._run == 0:
            self._arm(steps_done, due)
            return
        self._interrupt(recorder, steps_done, due, path, None, relative)

    def end_notes(self, steps_done: Any) -> Any:
        """What the end of a run that passed no save point of a step says, one line each: exec
        fails the run for the missing resume record, and shows these lines."""
        notes = []
        for step in self._steps:
            if step in self._served:
                continue
            if step <= steps_done:
                notes.append(f"repro_audit: --interrupt-at {step}: the script told the recorder "
                             f"of no save at or after step {step} (it ran {steps_done} steps): "
                             "call rec.saved(path) after its own save, or give the recorder "
                             f"checkpoint=(save, load) ({DOCS})")
        if self._armed is not None:
            notes.append(f"repro_audit: --interrupt-at {self._armed['interrupt_at']}: the save "
                         f"point after step {self._armed['step']} is the run's end: no step "
                         "follows it to compare; interrupt at an earlier step")
        return notes

    # -- the pieces --

    def _due(self, steps_done: Any) -> Any:
        """The audit's steps a save after `steps_done` steps is the save point of (at most one:
        ValueError naming them when it would be two)."""
        due = [s for s in self._steps if s not in self._served and s <= steps_done]
        if len(due) > 1:
            raise ValueError(
                "repro_audit: --interrupt-at " + " and ".join(map(str, due)) + " fall on the same "
                f"save of the script (after step {steps_done}): give steps that fall between "
                f"different saves ({DOCS})")
        return due

    def _arm(self, steps_done: Any, due: Any) -> None:
        """Run 0 at a save point: its state is digested at the compare point."""
        self._served.add(due[0])
        self._armed = {"record": "resume", "step": steps_done, "interrupt_at": due[0],
                       "resumed": False}

    def _interrupt(self, recorder: Any, step: Any, due: Any, path: Any, write_seconds: Any,
                   relative: Any = None) -> None:
        """The recorder's file beside the script's, and the end of the process."""
        recorder._settle()
        facts = _file_facts(path)
        facts["file"] = relative if relative is not None else self._relative(path)
        if write_seconds is not None:
            facts["write_seconds"] = write_seconds
        _kill_for_test(self._kill_at, "checkpoint")
        side = workers.side_file(recorder._path)
        loader_workers = ""
        if os.path.exists(side):
            with open(side, encoding="utf-8") as f:
                loader_workers = f.read()
        manifest = {
            "format": FORMAT, "version": VERSION, "step": step, "interrupt_at": due[0],
            "run": self._run, "rank": self._rank,
            "audit_id": recorder._audit_id,
            "checkpoint": facts,
            "records": recorder._records.suspend(parked_temporary(recorder._path, step)),
            "recorder": {"epoch_batches": {str(e): n for e, n in recorder._epoch_batches.items()},
                         "recording_seconds": recorder._recording,
                         "elapsed_seconds": time.perf_counter() - recorder._started,
                         "warnings": recorder._warnings, "loader_workers": loader_workers},
        }
        write_whole(self._name(due[0], ".recorder.json"), json.dumps(manifest))
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


def _file_facts(path: Any) -> Any:
    with open(path, "rb") as f:
        data = f.read()
    return {"bytes": len(data), "xxh3": digests.digest_bytes(digests.U8, (len(data),), data)}


def _check_file(path: Any, expected: Any) -> None:
    """ValueError unless `path` is the file the recorder's file names (size and digest)."""
    try:
        facts = _file_facts(path)
    except OSError as e:
        raise ValueError(f"repro_audit: the checkpoint {path} cannot be read: {e}") from None
    if facts["bytes"] != expected["bytes"] or facts["xxh3"] != expected["xxh3"]:
        raise ValueError(f"repro_audit: {path} is not the checkpoint the interrupted run wrote "
                         f"({facts['bytes']} bytes, not {expected['bytes']}, or another digest)")


def _is_count(value: Any) -> Any:
    return type(value) is int and value >= 0


def _read_manifest(path: str, run: int, rank: int, recorder: Any,
                   steps: List[int]) -> Dict[str, Any]:
    """The recorder's file of an interrupt, checked: its format, run, rank, audit, the step S it
    serves (one of the audit's) and the steps done (S or more), the script's file (a name in the
    folder, its size and digest), and that it names no file for the trace (which version 1
    did)."""
    try:
        with open(path, encoding="utf-8") as f:
            saved = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError(f"repro_audit: {RESUME_STATE}={path!r}: cannot be read: {e}") from None
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
    interrupt_at, step = saved.get("interrupt_at"), saved.get("step")
    if type(interrupt_at) is not int or interrupt_at not in steps:
        raise ValueError(f"repro_audit: {path}: interrupt_at {interrupt_at!r} is none of the "
                         f"audit's {INTERRUPT_AT} steps {steps}")
    if type(step) is not int or step < interrupt_at:
        raise ValueError(f"repro_audit: {path}: step {step!r}: expected the steps done at the "
                         f"save, {interrupt_at} or more")
    facts = saved.get("checkpoint")
    if (not isinstance(facts, dict) or not isinstance(facts.get("file"), str) or
            not _is_count(facts.get("bytes")) or not isinstance(facts.get("xxh3"), str) or
            not isinstance(facts.get("write_seconds", 0.0), (int, float))):
        raise ValueError(f"repro_audit: {path}: checkpoint {facts!r}: expected {{file, bytes, "
                         "xxh3}}, and write_seconds when the recorder saved")
    records = saved.get("records")
    if not isinstance(records, dict) or "temporary" in records:
        named = records.get("temporary") if isinstance(records, dict) else None
        raise ValueError(f"repro_audit: {path}: refused: it names a file for the trace "
                         f"({named!r}), which this recorder never writes there nor reads: the "
                         "trace's temporary is derived from the trace's name and the step")
    return saved
