"""The recorder a PyTorch training script keeps in (docs/pytorch.md):

    with repro_audit.record(model, optimizer) as rec:
        for epoch in range(epochs):
            for x, y in loader:
                ...; loss.backward(); optimizer.step()
                rec.step(batch=(x, y), loss=loss, epoch=epoch)

`record` gives a no-op recorder unless an audit asked for a trace (REPRO_AUDIT_TRACE, set by
`repro-audit exec` or by hand), so the lines stay in a script for good. Per step it records the
digests of the batch tensors given, the loss's exact float32 bits, every parameter's gradient and
value, every buffer and all optimizer state (state.py); at the start the initial weights and
buffers, the seeds and the RNG states it can see; an environment (versions, GPU, determinism
flags, threads). The trace is written whole when the run ends, in the tool's format:
`repro-audit compare` reads it. How it ended is its end record's `status`: "completed" at the end
of the `with` block, at close() or at a normal exit; "failed", with the exception's type, when an
exception leaves the block or ends the script. A failed run's trace is never compared as whole.
"""
import atexit
import json
import multiprocessing
import os
import platform
import random
import socket
import sys
import time
from types import TracebackType
from typing import (TYPE_CHECKING, Any, Callable, Dict, List, Literal, Mapping, Optional,
                    Sequence, SupportsIndex, Tuple, Type, TypeVar, Union)

from . import checkpoint as checkpoints
from . import collective
from . import cudnn_log
from . import detail
from . import distributed
from . import device_digest
from . import digest as digests
from . import kept_op
from . import misuse
from . import op_records
from . import perturb
from . import snapshots
from . import settings as settings_module
from . import workers
from .op_places import checked_layers
from .replay import REFUSED_EXIT as REPLAY_REFUSED_EXIT
from .state import ModelState, check_name
from .trace import (FORMAT_VERSION, TraceRecords, canonical_json, finite_or_none, float32_value,
                    loss_bits)

if TYPE_CHECKING:  # the package imports without torch
    import torch

VERSION = "0.1.0"

# What the public calls take (docs/pytorch.md): an op window "A:B" or (first, last), a level of
# detail "every:1000" or its plan, a kept op "STEP:INDEX" or (step, index), the checkpoint
# functions (save, load) or a Checkpoint, a batch (a tensor or the tensors inputs, labels), the
# predicted classes (a tensor of classes or of scores, or a sequence of ints).
Window = Union[str, Tuple[int, Optional[int]]]
DigestPlan = Union[str, detail.TensorDigestPlan]
OpIndex = Union[str, Tuple[int, int]]
CheckpointFunctions = Union[checkpoints.Checkpoint,
                            Tuple[Callable[[str], object], Callable[[str], object]]]
Batch = Union["torch.Tensor", Sequence["torch.Tensor"]]
Predictions = Union["torch.Tensor", Sequence[int]]
Loader = TypeVar("Loader")

_MISSING = object()


def exception_name(exception_type: object) -> str:
    """"ZeroDivisionError", "torch.cuda.OutOfMemoryError": what a failed end record says."""
    module = getattr(exception_type, "__module__", "builtins")
    name = getattr(exception_type, "__qualname__", str(exception_type))
    return name if module == "builtins" else f"{module}.{name}"


def failure_of(exception_type: object, exception: object) -> Optional[str]:
    """What a failed end record says of an exception, or None when it is no failure:
    sys.exit() or sys.exit(0) is the script's normal end."""
    if (isinstance(exception_type, type) and issubclass(exception_type, SystemExit) and
            getattr(exception, "code", None) in (None, 0)):
        return None
    return exception_name(exception_type)


def check_step_arguments(loss: object, epoch: object) -> None:
    """TypeError or ValueError for a step the trace cannot record, with or without an audit (a
    typo fails the day it is written, not the day a run is audited)."""
    if loss is _MISSING or loss is None:
        raise TypeError("repro_audit: step() needs loss=, the step's loss (a tensor or a number)")
    if isinstance(epoch, bool) or not isinstance(epoch, int) and not hasattr(epoch, "__index__"):
        raise TypeError(f"repro_audit: step(epoch={epoch!r}): expected an integer")
    if int(epoch) < 0:
        raise ValueError(f"repro_audit: step(epoch={epoch!r}): expected an integer >= 0")


def seed_everything(seed: Optional[int] = None, default: Optional[int] = None) -> Optional[int]:
    """Seeds Python's `random`, numpy's global generator and torch (CPU and CUDA) with `seed`, else
    with REPRO_AUDIT_SEED (what `repro-audit exec` sets per run), else with `default`; returns the
    seed used, or None when there is none to apply."""
    if seed is None:
        seed = settings_module.seed()
    if seed is None:
        seed = default
    if seed is None:
        return None
    random.seed(seed)
    try:
        import numpy
        numpy.random.seed(seed % (1 << 32))
    except ImportError:
        pass
    import torch
    torch.manual_seed(seed)
    global _seeded
    # What the seed made of the random states: the report tells a seed that never reached them
    # (the script seeds again after this) from one that was the same in every run.
    _seeded = {"seed": seed, "rng_states": _rng_states(torch)}
    return seed


_seeded = None  # seed_everything's seed and the states right after it, for the trace's header


def _rng_states(torch: Any) -> Any:
    """Digests of the random states the recorder can see: what differs when runs are seeded
    differently (or not at all)."""
    states = workers.host_rng_states(torch)
    if torch.cuda.is_available():
        states["cuda"] = [digests.tensor_digest(s) for s in torch.cuda.get_rng_state_all()]
    return states


def _environment(torch: Any, threads: Any, digests_where: Any, cublas_workspace_config: Any) -> Any:
    cuda = torch.cuda.is_available()
    cudnn = torch.backends.cudnn
    return {
        "backend": "pytorch-cuda" if cuda else "pytorch-cpu",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": cudnn.version() if cudnn.is_available() else None,
        "gpu": torch.cuda.get_device_name(0) if cuda else None,
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "cudnn_deterministic": bool(cudnn.deterministic),
        "cudnn_benchmark": bool(cudnn.benchmark),
        "cublas_workspace_config": cublas_workspace_config,
        # TF32 (Ampere and later): matmuls and convolutions on 10-bit mantissas, other bits than
        # fp32 and than an older GPU, though identical run to run on one (doctor says so).
        "matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "cudnn_allow_tf32": bool(getattr(cudnn, "allow_tf32", False)),
        "threads": threads,
        "interop_threads": torch.get_num_interop_threads(),
        "python": platform.python_version(),
        "os": f"{platform.system()} {platform.release()} {platform.machine()}",
        "hostname": socket.gethostname(),
        # A process multiprocessing started (mp.spawn's workers): doctor names seeding there.
        "spawned": multiprocessing.parent_process() is not None,
        "tool_version": "repro_audit-python " + VERSION,
        "digests": digests_where,
    }


class NoOpRecorder:
    """What from_env gives when no audit asked for a trace: every call checks its arguments as
    the recorder does, and does nothing."""

    enabled = False
    start_step, restored = 0, None  # never resumed (checkpoint.py)

    def __init__(self, checkpoint: Optional[CheckpointFunctions] = None) -> None:
        self._checkpoint = checkpoint  # the recorder's save and load (checkpoint.py), or None

    def __enter__(self) -> "NoOpRecorder":
        return self

    def __exit__(self, exception_type: Optional[Type[BaseException]],
                 exception: Optional[BaseException],
                 traceback: Optional[TracebackType]) -> Literal[False]:
        return False

    def step(self, batch: Batch = (), loss: object = _MISSING, epoch: SupportsIndex = 0,
             indices: "Optional[torch.Tensor]" = None) -> None:
        check_step_arguments(loss, epoch)

    def saved(self, path: "str | os.PathLike[str]") -> None:
        """Checks `path` as the recorder does (a path to a file there) and does nothing."""
        checkpoints.check_saved_path(path, self._checkpoint)

    _closed = False

    def close(self) -> None:
        if self._closed:  # the misuse shows without an audit too
            misuse.warn(misuse.SECOND_CLOSE)
        self._closed = True

    finish = close

    def watch_loader(self, loader: Loader) -> Loader:
        return loader

    def eval(self, predictions: Predictions, labels: Optional[Predictions] = None,
             loss: "Union[torch.Tensor, float, None]" = None) -> None:
        pass


def record(model: "torch.nn.Module", optimizer: "Optional[torch.optim.Optimizer]" = None, *,
           ops: Optional[Window] = None, tensor_digests: Optional[DigestPlan] = None,
           keep_op: Optional[OpIndex] = None, checkpoint: Optional[CheckpointFunctions] = None,
           scheduler: Optional[checkpoints.Stateful] = None,
           scaler: Optional[checkpoints.Stateful] = None, names: Optional[Sequence[str]] = None,
           layers: Optional[Mapping[str, str]] = None, spec: Optional[Dict[str, Any]] = None,
           trace: "Union[str, os.PathLike[str], None]" = None,
           keep_bytes: Optional[int] = None, replays: Optional[int] = None
           ) -> "Union[Recorder, NoOpRecorder]":
    """The documented form: `with repro_audit.record(model, optimizer) as rec:` (Recorder.from_env
    as a context manager: the end of the block ends the run, an exception marks it failed).
    `scheduler`, `scaler`: the LR scheduler and GradScaler the script steps, whose state the
    resume check compares (docs/resume.md). The settings (settings.py; docs/pytorch.md,
    "Settings"), each over its variable: `trace` (REPRO_AUDIT_TRACE: a trace without exec),
    `ops` (REPRO_AUDIT_TRACE_OPS: "A:B", "all", a step, or (first, last)), `tensor_digests`
    (REPRO_AUDIT_TENSOR_DIGESTS), `keep_op` (REPRO_AUDIT_KEEP_OP: "STEP:INDEX" or a pair),
    `keep_bytes` (REPRO_AUDIT_KEEP_BYTES), `replays` (REPRO_AUDIT_REPLAYS); None: not given.
    `names`, `layers`, `spec`: from_env's."""
    return Recorder.from_env(model, optimizer, ops=ops, tensor_digests=tensor_digests,
                             keep_op=keep_op, checkpoint=checkpoint, scheduler=scheduler,
                             scaler=scaler, names=names, layers=layers, spec=spec, trace=trace,
                             keep_bytes=keep_bytes, replays=replays)


class Recorder:
    """Records one run into the trace at `path` (see the module's documentation)."""

    enabled = True

    @classmethod
    def from_env(cls, model: "torch.nn.Module", optimizer: "Optional[torch.optim.Optimizer]" = None,
                 *, names: Optional[Sequence[str]] = None,
                 layers: Optional[Mapping[str, str]] = None,
                 spec: Optional[Dict[str, Any]] = None,
                 checkpoint: Optional[CheckpointFunctions] = None,
                 scheduler: Optional[checkpoints.Stateful] = None,
                 scaler: Optional[checkpoints.Stateful] = None,
                 **keywords: Any) -> "Union[Recorder, NoOpRecorder]":
        """`names`: the parameters' names in the trace, in named_parameters order (default:
        PyTorch's); `layers`: module paths renamed in the op records ({"model.0": "conv2d_0"};
        op_places.py), a path that is no module refused; `spec`: the trace's spec (default:
        REPRO_AUDIT_SPEC, else the script's name). All three serve a trace that must line up with
        another tool's, as the engine's for the cross-check (docs/pytorch.md, "Cross-check with
        the engine"; docs/equivalence.md, "The engine against PyTorch"). `checkpoint`: (save,
        load), or a checkpoint.Checkpoint, for a recorder that saves and loads for `exec
        --interrupt-at` (a script that saves itself calls rec.saved(path) instead); `scheduler`,
        `scaler`: the LR scheduler and GradScaler the script steps, compared at a resume
        (docs/resume.md). `keywords`: the settings record() takes (trace, ops, tensor_digests,
        keep_op, keep_bytes, replays), checked with or without an audit."""
        checkpoint = checkpoints.checkpoint_of(checkpoint)  # a wrong one fails without an audit
        checkpoints.stateful_of(checkpoint, scheduler, scaler)
        given = settings_module.Settings.from_environment(**keywords)
        if not given.trace:
            return NoOpRecorder(checkpoint)
        return cls(model, optimizer, settings=given, names=names, layers=layers, spec=spec,
                   checkpoint=checkpoint, scheduler=scheduler, scaler=scaler)

    def __init__(self, model: "torch.nn.Module",
                 optimizer: "Optional[torch.optim.Optimizer]" = None,
                 path: "Union[str, os.PathLike[str], None]" = None, *,
                 settings: Optional[settings_module.Settings] = None,
                 names: Optional[Sequence[str]] = None,
                 layers: Optional[Mapping[str, str]] = None,
                 spec: Optional[Dict[str, Any]] = None,
                 checkpoint: Optional[CheckpointFunctions] = None,
                 scheduler: Optional[checkpoints.Stateful] = None,
                 scaler: Optional[checkpoints.Stateful] = None, **keywords: Any) -> None:
        """Records into `path` (else the settings' trace), with `settings` (a settings.Settings),
        else the environment's under `keywords` (record()'s: ops, tensor_digests, keep_op,
        keep_bytes, replays). The op window (first, last) records the ops of its steps
        (op_records.py); keep_op, (step, index) of the op kept whole and replayed `replays` times
        at the end (kept_op.py), records its step's ops whatever the window says;
        tensor_digests, the level of detail (a detail.TensorDigestPlan, or its text
        "every:1000,5000:5100"); `names`, `layers`, `checkpoint`, `scheduler`, `scaler`: as
        from_env's."""
        import torch

        self._settings = given = _settings_of(path, settings, keywords)
        given.warn_unused()
        # A rank of a data-parallel run, or None.
        placement = distributed.placement(torch, given.world_size, given.rank)
        self._path = path = _trace_path(given, placement)
        self._torch, self._model, self._optimizer = torch, model, optimizer
        self._install_interrupts(checkpoint, placement, scheduler, scaler)
        self._recording = 0.0
        self._finished = False
        self._error: Optional[str] = None  # the exception that ended the script, once known
        self._state = ModelState(torch, distributed.unwrapped(model), optimizer, names)
        self._layers = checked_layers(distributed.unwrapped(model), layers)
        self._run, self._audit_id = given.run, given.audit_id
        self._replays = given.replays
        self._kept_path = op_records.kept_outputs_path(path)
        self._remove_earlier_files()
        started = time.perf_counter()
        self._digester = device_digest.Digester(torch, given.device_digest_library)
        header = self._header(spec)
        self._warnings: List[str] = []  # misuse.py: what the trace's header says went wrong
        self._install_collectives(placement, header)
        self._install_op_recording(header)
        self._perturb(header)
        self._eval = perturb.EvalRecord()
        self._records = self._initial_records(header)
        self._pending: Any = None  # the last step's record and its batch, still on the GPU
        # epoch -> steps recorded in it (the next step's batch number)
        self._epoch_batches: Dict[int, int] = {}
        self._started = time.perf_counter()
        self._last = self._started
        self._recording += self._started - started
        self.start_step, self.restored = 0, None  # the steps done before this process, load's
        self._install_hooks()

    # --- what __init__ does, one job each, in its order ---

    def _install_interrupts(self, checkpoint: Any, placement: Any, scheduler: Any,
                            scaler: Any) -> None:
        """exec --interrupt-at (checkpoint.py): self._interrupts, None without one."""
        self._checkpoint = checkpoints.checkpoint_of(checkpoint)
        scheduler, scaler = checkpoints.stateful_of(self._checkpoint, scheduler, scaler)
        self._interrupts = checkpoints.Interrupts.from_settings(
            self._torch, self._checkpoint, self._settings,
            rank=placement.rank if placement is not None else 0,
            scheduler=scheduler, scaler=scaler)

    def _remove_earlier_files(self) -> None:
        """What an earlier run left for this trace: its loader workers' side file, its kept
        outputs (not this run's values)."""
        workers.remove_side_file(self._path)
        if self._kept_path and os.path.exists(self._kept_path):
            os.remove(self._kept_path)

    def _header(self, spec: Any) -> Any:
        """The trace's header, but for what the installers add (distributed, trace_ops, keep_op,
        perturbation): spec, seeds, environment, RNG states, parameters and buffers, the level of
        detail and what seed_everything did."""
        torch, settings = self._torch, self._settings
        # `repro-audit exec` gives the audit's spec, so that the trace is known as the audit's by
        # its digest; by hand, the script's name.
        if spec is None and settings.spec is not None:
            spec = settings.spec
        elif spec is None:
            name = settings.name or os.path.splitext(os.path.basename(sys.argv[0] or "python"))[0]
            spec = {"name": name or "python", "source": "pytorch"}
        check_name("spec", spec.get("name") if isinstance(spec, dict) else None)
        seed = torch.initial_seed() if settings.seed is None else settings.seed
        threads = torch.get_num_threads()
        header = {
            "record": "header",
            "format_version": FORMAT_VERSION,
            "tool_version": "repro_audit-python " + VERSION,
            "source": {"kind": "pytorch", "command": _command_text(sys.argv)},
            "spec": spec, "spec_digest": digests.text_digest(canonical_json(spec)),
            "run_index": settings.run, "seed_group": settings.seed_group,
            "seeds": {"init": seed, "data": seed, "dropout": seed},
            "backend": "pytorch-cuda" if torch.cuda.is_available() else "pytorch-cpu",
            "threads": max(1, threads),
            "determinism": {"mode": "deterministic" if torch.are_deterministic_algorithms_enabled()
                            else "nondeterministic", "ops": {}},
            "environment": _environment(torch, threads, self._digester.where,
                                        settings.cublas_workspace_config),
            "rng_states": _rng_states(torch),
            "ledger": [],
            "params": self._state.header_params(), "buffers": self._state.header_buffers(),
            "optimizer_state": [], "fault": None,
        }
        if settings.audit_id:
            header["audit_id"] = settings.audit_id
        plan = settings.tensor_digests
        if plan is not None and not plan.all():
            header["format_version"] = detail.FORMAT_VERSION
            header["tensor_digests"] = plan.header()
        if _seeded is not None:
            # torch.initial_seed() is the last seed torch was given: another than
            # seed_everything's says the script seeded torch again after it.
            header["seeded"] = dict(_seeded, torch_initial_seed=torch.initial_seed())
        return header

    def _install_collectives(self, placement: Any, header: Any) -> None:
        """A rank of a data-parallel run: the header's `distributed`, and the DDP model's buckets
        recorded (collective.py) into self._collectives, or why not in the warnings."""
        self._collectives = None
        if placement is None:
            return
        header["distributed"] = placement.header(self._settings.nccl)
        self._collectives, fields, unwrapped_hook = collective.install(
            self._torch, self._model, self._state.params, self._digester)
        header["distributed"].update(fields)
        if unwrapped_hook:  # why the buckets are not recorded, in words
            self._warnings.append(unwrapped_hook)

    def _install_op_recording(self, header: Any) -> None:
        """The op window's recording (op_records.py) into self._ops, None without a window: the
        kept op's step is recorded whatever the window says."""
        torch, settings = self._torch, self._settings
        self._ops = None
        window, keep_op = settings.ops, settings.keep_op
        if keep_op is not None and (window is None or
                                    not op_records.in_window(window, keep_op[0])):
            window = (keep_op[0], keep_op[0] + 1)
        if window is None:
            return
        header["trace_ops"] = {"first": window[0], "last": window[1]}
        cudnn = (cudnn_log.CudnnLedger(torch, cudnn_log.source(settings.cudnn_log_dest,
                                                               settings.cudnn_log_level))
                 if torch.cuda.is_available() else None)
        self._ops = op_records.OpRecording(
            torch, self._model, self._optimizer, window, settings.keep_bytes, cudnn,
            self._digester, keep_op,
            os.path.dirname(self._kept_path) if self._kept_path else None, self._layers)
        if keep_op is not None:
            header["keep_op"] = {"step": keep_op[0], "index": keep_op[1]}

    def _perturb(self, header: Any) -> None:
        """The perturbed group's flipped weight (perturb.py), before the initial weights are
        digested; a model that an audit with that group cannot perturb fails now."""
        settings = self._settings
        perturb.check_perturbable(self._torch, self._state.params, settings.perturb_planned)
        if perturb.wanted(settings.seed_group, settings.perturb):
            header["perturbation"] = perturb.flip_one_weight(
                self._torch, self._state.params, header["seeds"]["init"], settings.perturb)

    def _initial_records(self, header: Any) -> Any:
        """The trace's records, begun with the header and the initial weights and buffers."""
        canonical_json(header).encode("utf-8")  # what the trace cannot hold fails now
        initial = self._digester.batch()
        weights, buffers = self._state.weights(initial.add), self._state.buffers(initial.add)
        initial.collect()
        return TraceRecords(header, device_digest.resolved(weights),
                            device_digest.resolved(buffers), self._path)

    def _install_hooks(self) -> None:
        """The run's end at an uncaught exception and at exit; the first window step's ops; the
        compare point's hook and, in a resumed process, the trace taken up (and load())."""
        self._previous_hook = sys.excepthook
        sys.excepthook = self._exception_hook
        atexit.register(self._finish_at_exit)
        if self._ops is not None:
            self._ops.begin(0)
        if self._interrupts is not None:
            self._interrupts.begin(self)

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, exception_type: Optional[Type[BaseException]],
                 exception: Optional[BaseException],
                 traceback: Optional[TracebackType]) -> Literal[False]:
        """The end of the `with` block ends the run: completed, or failed by the exception that
        leaves it (which goes on)."""
        if exception_type is not None and self._error is None:
            self._error = failure_of(exception_type, exception)
        self._end()
        return False

    def _exception_hook(self, exception_type: Any, exception: Any, traceback: Any) -> None:
        """An exception that ends the script (sys.excepthook runs before the exit hooks): the run
        failed."""
        if self._error is None:
            self._error = exception_name(exception_type)
        self._previous_hook(exception_type, exception, traceback)

    def _finish_at_exit(self) -> None:
        """The exit hook: a trace that cannot be written makes the exit status non-zero (an
        exception in an exit hook would leave it 0, and the run would look recorded)."""
        try:
            self._end()
        except BaseException as e:  # noqa: B902: whatever it is, the run must not look recorded
            print(f"repro_audit: the trace {self._path} could not be written: "
                  f"{type(e).__name__}: {e}", file=sys.stderr, flush=True)
            sys.stdout.flush()
            os._exit(1)

    def _labels_digest(self, batch: Any, labels: Any) -> Any:
        # Class labels as the tool records them: int32 (PyTorch's are int64).
        if not labels.is_floating_point():
            labels = labels.to(self._torch.int32)
        return batch.add(labels)

    def step(self, batch: Batch = (), loss: object = _MISSING, epoch: SupportsIndex = 0,
             indices: "Optional[torch.Tensor]" = None) -> None:
        """Records the step just taken (call after optimizer.step()): `batch` the tensors of the
        batch (inputs, labels), `loss` its loss (required), `epoch` its epoch (0, 1, ...: never
        back), `indices` the sample indices when the script knows them. With device digests
        nothing here waits for the GPU: the step's digests and loss come back while the next
        step runs (_settle)."""
        check_step_arguments(loss, epoch)
        if self._finished:
            raise RuntimeError("repro_audit: step() after the run ended (close() or the end of "
                               "the with block)")
        now = time.perf_counter()
        seconds = now - self._last
        ops = self._ops.end() if self._ops is not None else None
        torch = self._torch
        self._settle()
        tensors = list(batch) if isinstance(batch, (tuple, list)) else [batch]
        self._records.check_epoch(int(epoch))  # (the last step settled above)
        if self._interrupts is not None:
            self._interrupts.before_step(self, tensors, indices, int(epoch))
        digesting = self._digester.batch()
        empty = digesting.add(torch.zeros(0, dtype=torch.int64))
        state_names, state = self._state.optimizer_state(digesting.add)
        if not self._records.step_count:
            self._records.header["optimizer_state"] = state_names
        epoch = int(epoch)
        number = self._epoch_batches.get(epoch, 0)  # a counter: no walk of the earlier steps
        self._epoch_batches[epoch] = number + 1
        record = {
            "step": self._records.step_count, "epoch": epoch, "batch": number,
            "indices": digesting.add(indices) if indices is not None else empty,
            "inputs": digesting.add(tensors[0]) if tensors else empty,
            "labels": self._labels_digest(digesting, tensors[1]) if len(tensors) > 1 else empty,
            "loss": (digesting.add_copy(loss) if isinstance(loss, torch.Tensor)
                     else device_digest.Pending(loss)),
            "grads": self._state.grads(digesting.add),
            "weights": self._state.weights(digesting.add),
            "buffers": self._state.buffers(digesting.add),
            "optimizer_state": state,
            "seconds": seconds,
        }
        if ops is not None:
            record["ops"] = ops
        digesting.download()
        buckets = None
        if self._collectives is not None:
            record["collectives"], buckets = self._collectives.take()
            # The hook the buckets went through: the script may have registered it after record().
            self._records.header["distributed"]["comm_hook"] = self._collectives.hook_name
        self._pending = (record, digesting, buckets, misuse.grads_exist(self._state.params))
        if self._records.step_count in self._settings.snapshot_steps:
            snapshots.write_snapshot(self._path, self._records.step_count, self._state.params,
                                     self._settings.audit_id)
        if self._interrupts is not None:  # checkpoint functions: the recorder saves, or stops
            self._interrupts.after_step(self, self._records.step_count + 1)
        self._last = time.perf_counter()
        self._recording += self._last - now
        if self._ops is not None:
            self._ops.begin(self._records.step_count + 1)

    def saved(self, path: "str | os.PathLike[str]") -> None:
        """Tells the recorder that the script has just saved the file `path`, everything it
        resumes from (call it after its own save: torch.save(...); rec.saved(path)). Under `exec
        --interrupt-at S` the first call at or after step S is S's save point: a run but run 0
        ends there (exit status 75) and exec starts it again to resume from `path`, which must be
        in REPRO_AUDIT_CHECKPOINT_DIR (docs/resume.md, "PyTorch"). Otherwise it checks `path`
        (TypeError, ValueError: no file there) and does nothing."""
        path = checkpoints.check_saved_path(path, self._checkpoint)
        if self._finished:
            raise RuntimeError("repro_audit: saved() after the run ended (close() or the end of "
                               "the with block)")
        if self._interrupts is not None:
            self._interrupts.saved(self, path)

    def _steps_done(self) -> Any:
        """The steps recorded so far, the last one's still settling included."""
        return self._records.step_count + (1 if self._pending is not None else 0)

    def _settle(self) -> None:
        """The last step's record, its digests and loss back from the GPU, into the trace."""
        if self._pending is None:
            return
        record, digesting, buckets, had_grads = self._pending
        self._pending = None
        digesting.collect()
        if buckets is not None:
            buckets.collect()
        record = device_digest.resolved(record)
        warning = misuse.step_before_optimizer(record, self._records.initial_weights, had_grads)
        if warning:
            self._warnings.append(warning)
            misuse.warn(warning, depth=2)  # _settle, then step() or close()
        loss = record.pop("loss")
        bits = loss_bits(loss.item() if hasattr(loss, "item") else loss)
        record["loss_bits"], record["loss"] = bits, finite_or_none(float32_value(bits))
        record["optimizer_state"] = digests.digest_of_digests(record["optimizer_state"])
        self._records.add_step(record)

    def eval(self, predictions: Predictions, labels: Optional[Predictions] = None,
             loss: "Union[torch.Tensor, float, None]" = None) -> None:
        """The evaluation (the last call counts): `predictions`, the predicted class of every
        eval sample in a fixed order (a tensor of classes, or of scores [N, classes]); `labels`
        gives the end record's eval accuracy, `loss` its eval loss. The report's prediction
        churn compares the runs' classes (docs/statistics.md)."""
        self._eval.eval(predictions, labels, loss)

    def watch_loader(self, loader: Loader) -> Loader:
        """Records the random streams `loader`'s workers start from (workers.worker_init_fn,
        chained before the loader's own); returns the loader."""
        installed: Loader = workers.install(loader)
        return installed

    def _write_ledger(self, cudnn: Any) -> None:
        """The cuDNN ledger of the op window into the header, and what it holds in words
        (environment `cudnn_log`)."""
        header = self._records.header
        if cudnn is None:
            header["environment"]["cudnn_log"] = "no cuDNN: the run used no GPU"
            return
        cudnn.log.stop()  # a step begun but never recorded: give cuDNN its callback back
        header["ledger"] = cudnn.entries
        header["environment"]["cudnn_log"] = cudnn.note()

    def _replay_kept_op(self) -> None:
        """The kept op replayed in a fresh process (replay.py), its outcome in the trace's
        environment; replay.json beside kept-op.pt. The replay loads kept-op.pt only when it is
        the file written (its SHA-256, from this process's memory, on the replay's command
        line); a file changed since is refused, and the environment says so."""
        ops = self._ops
        if ops is None or ops.keep_op is None:
            return
        environment = self._records.header["environment"]
        path = ops.kept_op_path
        if path is None:
            environment["kept_op"] = (
                "not kept: " + ops.kept_op_unstorable if ops.kept_op_unstorable
                else "not kept: the run never reached op %d of step %d"
                % (ops.keep_op[1], ops.keep_op[0]))
            return
        import subprocess
        out = os.path.join(os.path.dirname(path), kept_op.REPLAY_FILE_NAME)
        _remove_if_there(out)  # only this replay's outcome may be read as the run's
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        # The replay is no run of the audit: no trace, no window, no kept op.
        child = settings_module.child_environment(
            drop=(settings_module.TRACE, settings_module.TRACE_OPS, settings_module.KEEP_OP),
            python_path=package)
        done = subprocess.run([sys.executable, "-m", "repro_audit.replay", path, "--sha256",
                               ops.kept_op_sha256, "--times", str(self._replays), "--out",
                               out], env=child, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True)
        last_line = (done.stderr.strip().splitlines() or ["exit %d" % done.returncode])[-1]
        if done.returncode == 0:
            with open(out) as f:
                result = json.load(f)
            environment["kept_op"] = ("replayed %d times in a fresh process: %d distinct "
                                      "output%s, the first %s the run's" % (
                                          result["times"], result["distinct_outputs"],
                                          "" if result["distinct_outputs"] == 1 else "s",
                                          "equal to" if result["matches_run"] else "unlike"))
        elif done.returncode == REPLAY_REFUSED_EXIT:
            environment["kept_op"] = "replay refused: " + last_line
        else:
            environment["kept_op"] = "replay failed: " + last_line

    def close(self) -> None:
        """Ends the run and writes its trace: at the end of the `with` block, else at exit (in a
        notebook, whose kernel does not exit, call it or use the `with` block). Its end record
        says "completed", or "failed" when an exception ended the run. A second call does
        nothing but warn."""
        if self._finished:
            misuse.warn(misuse.SECOND_CLOSE)
            return
        self._end()

    def _end(self) -> None:
        """The end of the run, once (the `with` block's end and the exit hook call it quietly
        after an explicit close())."""
        if self._finished:
            return
        self._finished = True
        if sys.excepthook == self._exception_hook:
            sys.excepthook = self._previous_hook
        atexit.unregister(self._finish_at_exit)
        started = time.perf_counter()
        self._settle()
        self._recording += time.perf_counter() - started
        if self._ops is not None:
            self._ops.end()  # a step never completed: its ops are no step's
            self._recording += self._ops.seconds
            if self._kept_path and self._ops.kept.entries:
                self._ops.kept.write(self._kept_path, self._audit_id, self._run)
            self._write_ledger(self._ops.cudnn)
            self._replay_kept_op()
        if self._interrupts is not None:
            for note in self._interrupts.end_notes(self._records.step_count):
                print(note, file=sys.stderr, flush=True)
        total = time.perf_counter() - self._started
        if self._warnings:
            self._records.header["recorder_warnings"] = self._warnings
        loader_workers = workers.read_side_file(self._path)
        self._records.end_fields = self._eval.end_fields(self._path)
        self._records.finish(total, self._recording, loader_workers, self._error)

    finish = close  # the name before the `with` form


def _settings_of(path: Any, given: Optional[settings_module.Settings],
                 keywords: Dict[str, Any]) -> settings_module.Settings:
    """The recorder's settings: `given`, else the environment's under `keywords` and `path`."""
    if given is None:
        given = settings_module.Settings.from_environment(trace=path, **keywords)
    elif path is not None or keywords:
        raise TypeError("repro_audit: Recorder(settings=...) takes no path or settings "
                        "keywords besides: they are the settings' own")
    if not given.trace:
        raise ValueError("repro_audit: Recorder needs a trace file (path, trace=, or "
                         "REPRO_AUDIT_TRACE); record() gives a no-op recorder without one")
    return given


def _trace_path(given: settings_module.Settings,
                placement: Optional[distributed.Placement]) -> str:
    """This process's trace (a rank's own in a data-parallel run), checked."""
    path: str = given.trace if placement is None else placement.trace_path(given.trace)
    settings_module.check_trace_path(path)
    return path


def _command_text(argv: Any) -> Any:
    """The command line as text the trace can hold: arguments that are not UTF-8 (a file name's
    bytes, kept by Python as lone surrogates) with their bytes replaced."""
    return [os.fsencode(a).decode("utf-8", "replace") if isinstance(a, str) else str(a)
            for a in argv]


def _remove_if_there(path: Any) -> None:
    """Removes the file `path` (a link itself, never what it names), if there is one; a folder
    there stays (the replay's write then fails, and says why)."""
    try:
        os.unlink(path)
    except OSError:
        pass
