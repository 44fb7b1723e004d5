"""Every setting of the recorder, read in this one module (docs/pytorch.md, "Settings"): the
audit's environment variables (what `repro-audit exec` sets for each run, or a user by hand) and
the few of other tools the recorder reads, each checked once, when the recorder is made, with an
error that names the variable (or the keyword) and the bad value: a value the C++ reader would
refuse in a trace is refused here, before the training, never written.

Precedence: a keyword argument of `record()` > the environment > the default. One exception, so
that an audit's traces are what its command line asked for: under an audit (`REPRO_AUDIT_ID` set,
as exec sets it) a window or plan that exec's command line set (a non-empty REPRO_AUDIT_TRACE_OPS,
REPRO_AUDIT_TENSOR_DIGESTS or REPRO_AUDIT_KEEP_OP) wins over the script's keyword, which is
then warned about (SettingsWarning): the manifest, the report's next step and every run follow
the tool's value.

Without a trace (no REPRO_AUDIT_TRACE and no `trace=`), the variables only a run of an audit
needs are not read: a script outside an audit never fails on a variable left in its shell.
REPRO_AUDIT_SEED is read either way (seed_everything uses it by hand too). A variable that
starts with REPRO_AUDIT_ and is no name of the project's but near one (a misspelling) is warned
about once per process, with the nearest name.

This module also builds the environment of the processes the package starts (the replay, the
ranks of launch.py, the pytest plugin's runs): a copy of this one, changed as each needs.
"""
from __future__ import annotations

import dataclasses
import difflib
import json
import os
import re
import stat
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Set, Tuple

from . import detail, kept_op

SEED_LIMIT = 1 << 64  # seeds are unsigned 64-bit integers (the trace's seeds.init)
RUN_LIMIT = 1 << 31  # a run number is an int in the reader
KEEP_BYTES_MAX = 1 << 30  # kept-outputs.bin stays under the reader's 2 GiB cap
DEFAULT_KEEP_BYTES = 64 << 20
DEFAULT_REPLAYS = kept_op.DEFAULT_REPLAYS
MAX_STEP = (1 << 63) - 1  # the reader's steps are int64

TRACE = "REPRO_AUDIT_TRACE"
RUN = "REPRO_AUDIT_RUN"
SEED = "REPRO_AUDIT_SEED"
SEED_GROUP = "REPRO_AUDIT_SEED_GROUP"
AUDIT_ID = "REPRO_AUDIT_ID"
NAME = "REPRO_AUDIT_NAME"
SPEC = "REPRO_AUDIT_SPEC"
TRACE_OPS = "REPRO_AUDIT_TRACE_OPS"
KEEP_BYTES = "REPRO_AUDIT_KEEP_BYTES"
KEEP_OP = kept_op.ENVIRONMENT  # REPRO_AUDIT_KEEP_OP
REPLAYS = kept_op.REPLAYS_ENVIRONMENT  # REPRO_AUDIT_REPLAYS
TENSOR_DIGESTS = detail.ENVIRONMENT  # REPRO_AUDIT_TENSOR_DIGESTS
PERTURB = "REPRO_AUDIT_PERTURB"
PERTURB_PLANNED = "REPRO_AUDIT_PERTURB_PLANNED"
INTERRUPT_AT = "REPRO_AUDIT_INTERRUPT_AT"
SNAPSHOT_STEPS = "REPRO_AUDIT_SNAPSHOT_STEPS"
CHECKPOINT_DIR = "REPRO_AUDIT_CHECKPOINT_DIR"
RESUME_FROM = "REPRO_AUDIT_RESUME_FROM"
RESUME_STATE = "REPRO_AUDIT_RESUME_STATE"
TEST_KILL_AT = "REPRO_AUDIT_TEST_KILL_AT"
DEVICE_DIGEST_LIBRARY = "REPRO_AUDIT_DEVICE_DIGEST_LIBRARY"
INVARIANCE = "REPRO_AUDIT_INVARIANCE"
BINARY = "REPRO_AUDIT_BINARY"
NCCL_VARIABLES = ("NCCL_ALGO", "NCCL_PROTO")  # what pins NCCL's reduction (distributed.py)

# The variables the C++ tool, the scripts and CI read: never warned about as misspellings.
OTHER_VARIABLES = frozenset(
    "REPRO_AUDIT_" + name for name in """ISA GEMM CUDA CUDA_PLUGIN TEST_THREAD_LIMIT PYTHON_DIR
    VERSION COMMIT BUILD_TYPE CXX_FLAGS UPDATE_GOLDEN WITH_TORCH WITH_BROWSER WITH_FUZZ
    WITH_SLURM FUZZ TSAN SANITIZE TESTS TEST_SOURCES TEST_DIGEST_LIBRARY COLD_OPTIMIZATION
    COLD_TARGETS""".split())


class SettingsWarning(UserWarning):
    """A setting that does not take effect as given: a misspelt REPRO_AUDIT_ variable, or a
    keyword of record() that the audit's own value overrides or that nothing uses."""


Window = Tuple[int, Optional[int]]


def _checked_integer(name: str, text: str, low: int, limit: int) -> int:
    # Digits only: "-1", "1e3", " 7" and "0x10" are not integers here, as in the C++ options.
    if not re.fullmatch(r"[0-9]+", text) or not low <= int(text) < limit:
        raise ValueError(f"repro_audit: {name}={text!r}: expected an integer in "
                         f"[{low}, {limit - 1}]")
    return int(text)


def parse_window(text: str, name: str = TRACE_OPS) -> Window:
    """(first, last) of "A:B" (steps A..B-1), "A:" (last None), "all" or "N" (N:N+1), as
    `--trace-ops` has it; ValueError naming `name` and the text otherwise."""
    text = text.strip()
    if text == "all":
        return 0, None
    first, colon, last = text.partition(":")

    def ascii_digits(part: str) -> bool:
        return part.isascii() and part.isdigit()
    window: Window
    try:
        if not ascii_digits(first) or (last and not ascii_digits(last)):
            raise ValueError
        if not colon:  # "N": step N alone
            window = int(first), int(first) + 1
        else:
            window = int(first), (int(last) if last else None)
        if max(window[0], window[1] or 0) > MAX_STEP:  # the reader's steps are int64
            raise ValueError
    except ValueError:
        raise ValueError(f"repro_audit: {name}={text!r}: expected N, A:B, A: or "
                         f"all, N, A and B step numbers up to {MAX_STEP}") from None
    if window[1] is not None and window[1] <= window[0]:
        raise ValueError(f"repro_audit: {name}={text!r}: the window is empty")
    return window


def parse_steps(text: str, name: str = INTERRUPT_AT, least: int = 1) -> List[int]:
    """The steps of `name` (REPRO_AUDIT_INTERRUPT_AT's, each >= 1; REPRO_AUDIT_SNAPSHOT_STEPS's,
    each >= 0), ascending ("" for none); ValueError naming it."""
    if not text:
        return []
    try:
        steps = [int(part) for part in text.split(",")]
    except ValueError:
        steps = [least - 1]
    if any(s < least or s > MAX_STEP for s in steps) or \
            not all(p.isascii() and p.isdigit() for p in text.split(",")):
        raise ValueError(f"repro_audit: {name}={text!r}: expected steps >= {least}, "
                         "comma-separated")
    return sorted(set(steps))


def _parse_replays(text: str, name: str = REPLAYS) -> int:
    text = text.strip()
    if not text.isdigit() or not 1 <= int(text) <= 1000:
        raise ValueError(f"repro_audit: {name}={text!r}: expected an integer from 1 to 1000")
    return int(text)


def _parse_seed_group(text: str) -> str:
    if text not in ("same", "different", "perturbed"):
        raise ValueError(f"repro_audit: {SEED_GROUP}={text!r}: expected same, different or "
                         "perturbed")
    return text


def _parse_audit_id(text: str) -> Optional[str]:
    if not text:
        return None
    if not re.fullmatch(r"[0-9a-f]{32}", text):
        raise ValueError(f"repro_audit: {AUDIT_ID}={text!r}: expected 32 lowercase hex digits")
    return text


def _parse_perturb(text: str) -> Optional[int]:
    if not text:
        return None
    if not text.isdigit() or not text.isascii():
        raise ValueError(f"repro_audit: {PERTURB}={text!r}: expected a run number")
    return int(text)


def _parse_tensor_digests(text: str, name: str = TENSOR_DIGESTS
                          ) -> Optional[detail.TensorDigestPlan]:
    """The plan of `text`, or None for every step per tensor (empty, "all", or a plan that
    holds every step)."""
    if not text:
        return None
    plan = detail.TensorDigestPlan.parse(text, name)
    return None if plan.all() else plan


# The settings given to record() as keywords (other than its objects: names, spec, checkpoint,
# scheduler, scaler), each with its variable.
KEYWORDS: Mapping[str, str] = {
    "trace": TRACE, "ops": TRACE_OPS, "tensor_digests": TENSOR_DIGESTS, "keep_op": KEEP_OP,
    "keep_bytes": KEEP_BYTES, "replays": REPLAYS}
# What exec's command line sets: under an audit its non-empty value wins over a keyword.
AUDIT_OWNED = {"ops": "--trace-ops", "tensor_digests": "--tensor-digests",
               "keep_op": "--keep-op"}


@dataclass(frozen=True)
class Settings:
    """The recorder's settings, one field per variable (its name in each field's comment).
    Made by from_environment; a field an audit alone sets holds its default outside one."""

    trace: Optional[str] = None  # REPRO_AUDIT_TRACE: the trace file (None: no audit, a no-op)
    seed: Optional[int] = None  # REPRO_AUDIT_SEED: the run's seed, in [0, 2^64)
    run: int = 0  # REPRO_AUDIT_RUN: the run's number, in [0, 2^31)
    seed_group: str = "same"  # REPRO_AUDIT_SEED_GROUP: same, different or perturbed
    audit_id: Optional[str] = None  # REPRO_AUDIT_ID: the audit's id, 32 lowercase hex digits
    name: Optional[str] = None  # REPRO_AUDIT_NAME: the spec's name (default: the script's)
    spec: Optional[Dict[str, Any]] = None  # REPRO_AUDIT_SPEC: the audit's spec, JSON
    ops: Optional[Window] = None  # REPRO_AUDIT_TRACE_OPS: the op window (op_records.py)
    keep_bytes: int = DEFAULT_KEEP_BYTES  # REPRO_AUDIT_KEEP_BYTES: kept outputs, [0, 1 GiB]
    keep_op: Optional[Tuple[int, int]] = None  # REPRO_AUDIT_KEEP_OP: STEP:INDEX (kept_op.py)
    replays: int = DEFAULT_REPLAYS  # REPRO_AUDIT_REPLAYS: replays of the kept op, 1 to 1000
    # REPRO_AUDIT_TENSOR_DIGESTS: the level of detail (detail.py); None: every step per tensor
    tensor_digests: Optional[detail.TensorDigestPlan] = None
    perturb: Optional[int] = None  # REPRO_AUDIT_PERTURB: the perturbed group's draw
    perturb_planned: bool = False  # REPRO_AUDIT_PERTURB_PLANNED=1: the audit has that group
    interrupt_at: Tuple[int, ...] = ()  # REPRO_AUDIT_INTERRUPT_AT: exec --interrupt-at's steps
    # REPRO_AUDIT_SNAPSHOT_STEPS: the steps after which the parameters' values are written
    # (snapshots.py; exec --versus)
    snapshot_steps: Tuple[int, ...] = ()
    checkpoint_dir: Optional[str] = None  # REPRO_AUDIT_CHECKPOINT_DIR: the run's checkpoints
    resume_from: Optional[str] = None  # REPRO_AUDIT_RESUME_FROM: the script's file to resume
    resume_state: Optional[str] = None  # REPRO_AUDIT_RESUME_STATE: the recorder's file of it
    test_kill_at: Optional[str] = None  # REPRO_AUDIT_TEST_KILL_AT: the tests' SIGKILL point
    device_digest_library: Optional[str] = None  # REPRO_AUDIT_DEVICE_DIGEST_LIBRARY
    invariance: Optional[str] = None  # REPRO_AUDIT_INVARIANCE: exec --invariance's plan, JSON
    binary: Optional[str] = None  # REPRO_AUDIT_BINARY: the tool the pytest plugin runs
    world_size: int = 1  # WORLD_SIZE (torchrun's), in [1, 2^31)
    rank: int = 0  # RANK (torchrun's), in [0, 2^31)
    nccl: Dict[str, str] = field(default_factory=dict)  # NCCL_ALGO, NCCL_PROTO when set
    cublas_workspace_config: Optional[str] = None  # CUBLAS_WORKSPACE_CONFIG
    cudnn_log_dest: Optional[str] = None  # CUDNN_LOGDEST_DBG: cuDNN's API log file
    cudnn_log_level: Optional[str] = None  # CUDNN_LOGLEVEL_DBG, else CUDNN_LOGINFO_DBG
    path: Optional[str] = None  # PATH: where the plugin looks for repro-audit
    # The keywords given (record()'s), for the checks of what they did (recorder.py).
    given: Tuple[str, ...] = ()

    @classmethod
    def from_environment(cls, environ: Optional[Mapping[str, str]] = None,
                         **keywords: Any) -> "Settings":
        """The settings of `environ` (default: this process's environment) with `keywords`
        (record()'s: trace, ops, tensor_digests, keep_op, keep_bytes, replays; a value None is
        not given) over it: keyword > environment > default, but for the audit's own window and
        plans (the module's documentation). ValueError naming the variable or keyword and the
        bad value; TypeError for a keyword of the wrong type or name."""
        source: Mapping[str, str] = os.environ if environ is None else environ
        warn_misspelt(source)
        given = {k: v for k, v in keywords.items() if v is not None}
        unknown = sorted(set(given) - set(KEYWORDS))
        if unknown:
            near = difflib.get_close_matches(unknown[0], list(KEYWORDS), n=1)
            raise TypeError(f"repro_audit: no setting {unknown[0]!r}"
                            + (f"; did you mean {near[0]}?" if near else ""))
        values: Dict[str, Any] = {}
        trace = given.get("trace")
        if trace is not None:
            values["trace"] = os.fspath(trace)
        else:
            values["trace"] = source.get(TRACE) or None
        seed = source.get(SEED)
        values["seed"] = None if seed is None else _checked_integer(SEED, seed, 0, SEED_LIMIT)
        values["device_digest_library"] = source.get(DEVICE_DIGEST_LIBRARY)
        values["invariance"] = source.get(INVARIANCE) or None
        values["binary"] = source.get(BINARY) or None
        values["nccl"] = {n: source[n] for n in NCCL_VARIABLES if source.get(n)}
        values["cublas_workspace_config"] = source.get("CUBLAS_WORKSPACE_CONFIG")
        values["cudnn_log_dest"] = source.get("CUDNN_LOGDEST_DBG")
        values["cudnn_log_level"] = source.get("CUDNN_LOGLEVEL_DBG",
                                               source.get("CUDNN_LOGINFO_DBG"))
        values["path"] = source.get("PATH")
        if values["trace"]:
            values.update(_audit_values(source))
        values.update(_keyword_values(given, source, values))
        values["given"] = tuple(sorted(given))
        return cls(**values)

    def replace(self, **changes: Any) -> "Settings":
        return dataclasses.replace(self, **changes)

    def warn_unused(self) -> None:
        """Warns (SettingsWarning) of each keyword given that nothing will use in this run: a
        budget of kept outputs without an op window, replays without a kept op."""
        if "keep_bytes" in self.given and self.ops is None and self.keep_op is None:
            warnings.warn("repro_audit: record(keep_bytes=...) has no effect: outputs are kept "
                          "only for the ops of an op window (ops=, REPRO_AUDIT_TRACE_OPS)",
                          SettingsWarning, stacklevel=4)
        if "replays" in self.given and self.keep_op is None:
            warnings.warn("repro_audit: record(replays=...) has no effect: only a kept op is "
                          "replayed (keep_op=, REPRO_AUDIT_KEEP_OP)", SettingsWarning,
                          stacklevel=4)


def _audit_values(source: Mapping[str, str]) -> Dict[str, Any]:
    """The fields only a run of an audit reads, from `source`, checked."""
    values: Dict[str, Any] = {}
    run = source.get(RUN)
    values["run"] = 0 if run is None else _checked_integer(RUN, run, 0, RUN_LIMIT)
    values["seed_group"] = _parse_seed_group(source.get(SEED_GROUP, "same"))
    values["audit_id"] = _parse_audit_id(source.get(AUDIT_ID) or "")
    values["name"] = source.get(NAME)
    spec = source.get(SPEC)
    values["spec"] = json.loads(spec) if spec else None
    window = source.get(TRACE_OPS)
    values["ops"] = parse_window(window) if window else None
    keep_bytes = source.get(KEEP_BYTES)
    if keep_bytes is not None:
        values["keep_bytes"] = _checked_integer(KEEP_BYTES, keep_bytes, 0, KEEP_BYTES_MAX + 1)
    keep = source.get(KEEP_OP)
    values["keep_op"] = kept_op.parse(keep) if keep else None
    values["replays"] = _parse_replays(source.get(REPLAYS, str(DEFAULT_REPLAYS)))
    values["tensor_digests"] = _parse_tensor_digests(source.get(TENSOR_DIGESTS) or "")
    values["perturb"] = _parse_perturb(source.get(PERTURB) or "")
    values["perturb_planned"] = source.get(PERTURB_PLANNED, "") == "1"
    values["interrupt_at"] = tuple(parse_steps(source.get(INTERRUPT_AT, "")))
    values["snapshot_steps"] = tuple(parse_steps(source.get(SNAPSHOT_STEPS, ""), SNAPSHOT_STEPS,
                                                 least=0))
    values["checkpoint_dir"] = source.get(CHECKPOINT_DIR)
    values["resume_from"] = source.get(RESUME_FROM) or None
    values["resume_state"] = source.get(RESUME_STATE) or None
    values["test_kill_at"] = source.get(TEST_KILL_AT)
    world = source.get("WORLD_SIZE")
    values["world_size"] = 1 if world is None else _checked_integer("WORLD_SIZE", world, 1,
                                                                      RUN_LIMIT)
    rank = source.get("RANK")
    values["rank"] = 0 if rank is None else _checked_integer("RANK", rank, 0, RUN_LIMIT)
    return values


def _keyword_values(given: Mapping[str, Any], source: Mapping[str, str],
                    values: Mapping[str, Any]) -> Dict[str, Any]:
    """The fields the keywords set, checked (a bad one fails with or without an audit), less
    those the audit's command line set otherwise (warned: the module's documentation)."""
    parsed: Dict[str, Any] = {}
    if "ops" in given:
        parsed["ops"] = _window_of(given["ops"], "ops", parse_window)
    if "keep_op" in given:
        parsed["keep_op"] = _window_of(given["keep_op"], "keep_op", kept_op.parse)
    if "tensor_digests" in given:
        plan = given["tensor_digests"]
        if isinstance(plan, str):
            plan = _parse_tensor_digests(plan, "tensor_digests")
        elif not isinstance(plan, detail.TensorDigestPlan):
            raise TypeError(f"repro_audit: tensor_digests={plan!r}: expected a plan's text "
                            "(\"every:1000,5000:5100\") or a detail.TensorDigestPlan")
        elif plan.all():
            plan = None
        parsed["tensor_digests"] = plan
    if "keep_bytes" in given:
        parsed["keep_bytes"] = _integer_keyword("keep_bytes", given["keep_bytes"], 0,
                                                KEEP_BYTES_MAX + 1)
    if "replays" in given:
        parsed["replays"] = _integer_keyword("replays", given["replays"], 1, 1001)
    if source.get(AUDIT_ID) and values.get("trace"):
        for keyword, option in AUDIT_OWNED.items():
            variable = KEYWORDS[keyword]
            if keyword in parsed and source.get(variable) and parsed[keyword] != values.get(
                    keyword):
                warnings.warn(
                    f"repro_audit: record({keyword}={given[keyword]!r}) is not applied: this "
                    f"audit asked for {variable}={source[variable]!r} (exec {option}), which "
                    "its manifest, its report and its other runs follow", SettingsWarning,
                    stacklevel=4)
                del parsed[keyword]
    if values.get("interrupt_at"):
        for keyword in ("ops", "keep_op"):
            if keyword in parsed:
                warnings.warn(
                    f"repro_audit: record({keyword}={given[keyword]!r}) is not applied: op records "
                    f"and exec --interrupt-at ({INTERRUPT_AT}) cannot be combined yet",
                    SettingsWarning, stacklevel=4)
                del parsed[keyword]
    return parsed


def _window_of(value: Any, name: str, parse: Any) -> Tuple[int, Optional[int]]:
    """A keyword's window: its text parsed, or a (first, last) pair checked as its text is."""
    if isinstance(value, str):
        return parse(value, name)  # type: ignore[no-any-return]
    if (isinstance(value, tuple) and len(value) == 2 and
            all(v is None or isinstance(v, int) and not isinstance(v, bool) for v in value)):
        last = "" if value[1] is None else str(value[1])
        return parse(f"{value[0]}:{last}", name)  # type: ignore[no-any-return]
    raise TypeError(f"repro_audit: {name}={value!r}: expected its text or a pair of integers")


def _integer_keyword(name: str, value: Any, low: int, limit: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value < limit:
        raise ValueError(f"repro_audit: {name}={value!r}: expected an integer in "
                         f"[{low}, {limit - 1}]")
    return value


def seed(environ: Optional[Mapping[str, str]] = None) -> Optional[int]:
    """REPRO_AUDIT_SEED, or None (seed_everything's: the one variable read without a trace)."""
    return Settings.from_environment(environ).seed


def trace_named(environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """REPRO_AUDIT_TRACE, or None: whether this process is a run of an audit, read without
    checking the other variables (the package's import, a DataLoader worker, the plugin)."""
    return (os.environ if environ is None else environ).get(TRACE) or None


def invariance_plan(environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """REPRO_AUDIT_INVARIANCE's text (exec --invariance's plan, JSON, which invariance_sweep.py
    checks), or None: read by the sweep, which runs with or without a trace."""
    return (os.environ if environ is None else environ).get(INVARIANCE) or None


def tool_variables(environ: Optional[Mapping[str, str]] = None
                   ) -> Tuple[Optional[str], Optional[str]]:
    """(REPRO_AUDIT_BINARY, PATH): where the pytest plugin finds the tool."""
    source = os.environ if environ is None else environ
    return source.get(BINARY), source.get("PATH")


def run_index(environ: Optional[Mapping[str, str]] = None) -> int:
    """REPRO_AUDIT_RUN (0 when unset), checked."""
    text = (os.environ if environ is None else environ).get(RUN)
    return 0 if text is None else _checked_integer(RUN, text, 0, RUN_LIMIT)


def check_trace_path(path: str, variable: str = TRACE) -> None:
    """ValueError unless `path` can become a trace: its folder exists and the name is a regular
    file or nothing yet. The trace is renamed over the name when the run ends; a device node, a
    FIFO, a folder or a symbolic link there is never replaced."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValueError(f"repro_audit: {variable}={path!r}: the folder {folder!r} does not exist")
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(info.st_mode):
        kind = ("a symbolic link" if stat.S_ISLNK(info.st_mode) else
                "a folder" if stat.S_ISDIR(info.st_mode) else "a device, FIFO or socket")
        raise ValueError(f"repro_audit: {variable}={path!r} is {kind}, not a trace file: the "
                         "recorder writes a trace only over a regular file")


def known_variables() -> Set[str]:
    """Every REPRO_AUDIT_ variable of the project: this module's and the other tools'."""
    names = {value for key, value in globals().items()
             if key.isupper() and isinstance(value, str) and value.startswith("REPRO_AUDIT_")}
    return names | OTHER_VARIABLES


_warned: Set[str] = set()  # the misspelt names warned about in this process


def warn_misspelt(environ: Mapping[str, str]) -> None:
    """Warns (SettingsWarning), once per name and process, of each REPRO_AUDIT_ variable that is
    no name of the project's but near one, naming the nearest."""
    known = known_variables()
    for name in environ:
        if not name.startswith("REPRO_AUDIT_") or name in known or name in _warned:
            continue
        near = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.8)
        if near:
            _warned.add(name)
            warnings.warn(f"repro_audit: {name} is not a variable repro_audit reads; did you "
                          f"mean {near[0]}? (docs/pytorch.md, \"Settings\")", SettingsWarning,
                          stacklevel=3)


def child_environment(drop: Iterable[str] = (), python_path: Optional[str] = None,
                      path_first: bool = True, **changes: str) -> Dict[str, str]:
    """The environment of a process the package starts: this one's, less `drop`, with `changes`,
    and with the folder `python_path` on PYTHONPATH, first (`path_first`) or last where it is not
    there yet (compared resolved)."""
    child = {k: v for k, v in os.environ.items() if k not in set(drop)}
    child.update(changes)
    if python_path is not None:
        paths = [p for p in child.get("PYTHONPATH", "").split(os.pathsep) if p]
        if path_first:
            paths.insert(0, python_path)
        elif os.path.realpath(python_path) not in (os.path.realpath(p) for p in paths):
            paths.append(python_path)
        child["PYTHONPATH"] = os.pathsep.join(paths)
    return child


__all__ = ["Settings", "SettingsWarning", "child_environment", "check_trace_path",
           "parse_window", "parse_steps", "run_index", "seed", "trace_named"]
