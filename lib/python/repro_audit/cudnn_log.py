"""What cuDNN ran for each convolution of the op window, read from cuDNN's own API log
(docs/pytorch.md, "cuDNN ledger").

With CUDNN_LOGLEVEL_DBG=3 and CUDNN_LOGDEST_DBG=<file> (`repro-audit exec --trace-ops` sets both
per run), cuDNN writes every API call it receives, with its arguments, to the file. PyTorch 2
runs convolutions through cuDNN's graph API, so each convolution it executes is one
`cudnnBackendExecute` call whose logged execution plan names the operation
(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD/BACKWARD_DATA/BACKWARD_FILTER_DESCRIPTOR), the
engine (`engine_id`), its knob choices (CUDNN_KNOB_TYPE_...) and its numerical notes
(CUDNN_NUMERICAL_NOTE_...: TENSOR_CORE, NONDETERMINISTIC...). The recorder notes the log's size
before and after each convolution op of the window and reads the calls in between; with
`cudnn.benchmark` the op first executes every candidate plan while timing them, so per direction
the last execution is the plan that ran.

The parser reads blocks ("I! CuDNN (v91900 56) function cudnnBackendExecute() called:", the
version and build as cuDNN 9.19 writes them, or "(v91900)" as older ones do, and the "i!" lines
under it) and finds those facts by their names, whatever the nesting and indentation of the
version writing them. Its tests are real logs of an H100 (tests/python/data/cudnn-logs).

What a log says of an engine's numerical notes is read as written: a list of notes, or
`numericalNotes: ...; val=NULL_PTR;`, cuDNN's way of logging an empty list (engines 1, 2 and 17
are always logged so, and no engine logged NONDETERMINISTIC once is ever logged NULL_PTR in the
real logs): no note, so deterministic. A block that names no notes at all leaves them unknown,
and so whether the engine is deterministic (None), never guessed.
"""
import os
import re

_BLOCK = re.compile(r"^[IWE]! CuDNN \(v\d+(?: \d+)*\) function (\w+)\(\) called:", re.M)
# Anything that looks like a block header, for the error that names a header the parser missed.
_ANY_HEADER = re.compile(r"^\S+ [Cc][Uu][Dd][Nn][Nn]\b.*\bcalled:.*$", re.M)
_OPERATION = re.compile(r"CUDNN_BACKEND_OPERATION_(CONVOLUTION_(?:FORWARD|BACKWARD_DATA|"
                        r"BACKWARD_FILTER))_DESCRIPTOR")
_ENGINE = re.compile(r"\bengine_id: type=int; val=(-?\d+);")
_KNOB = re.compile(r"\b(CUDNN_KNOB_TYPE_\w+): type=int(?:64_t)?; val=(-?\d+);")
_NOTE = re.compile(r"\b(CUDNN_(?:NUMERICAL|BEHAVIOR)_NOTE_\w+): type=bool; val=true;")
_NO_NOTES = re.compile(r"\bnumericalNotes: type=cudnnBackendDescriptor_t; val=NULL_PTR;")
_HAS_NOTES = re.compile(r"\bnumericalNotes: type=")
_DIMS = re.compile(r"\bdimA: type=int; val=\[([\d,]*)\];")

DIRECTIONS = {"CONVOLUTION_FORWARD": "forward", "CONVOLUTION_BACKWARD_DATA": "backward_data",
              "CONVOLUTION_BACKWARD_FILTER": "backward_filter"}


class CudnnLogError(RuntimeError):
    """cuDNN's log holds executions the parser cannot read: the ledger would be silently empty."""


def parse_executes(text):
    """The convolution executions of a piece of log, in order: dicts with `direction`
    ("forward", "backward_data", "backward_filter"), `engine_id` (None when the block names
    none), `knobs` {name: value}, `notes` (sorted names; None when the block says nothing of
    them) and `dims` (the operands' shapes, in the order logged). CudnnLogError when the text
    holds cudnnBackendExecute calls but no block header the parser reads (a cuDNN that writes
    its headers otherwise): it names the first header it saw."""
    executes = []
    starts = list(_BLOCK.finditer(text))
    if "cudnnBackendExecute" in text and len(_ANY_HEADER.findall(text)) != len(starts):
        unread = next(h.group(0) for h in _ANY_HEADER.finditer(text) if not _BLOCK.match(h.group(0)))
        raise CudnnLogError("repro_audit: cuDNN's API log holds cudnnBackendExecute calls under "
                            "block headers this parser does not read; the first: %r" % unread[:200])
    for i, start in enumerate(starts):
        if start.group(1) != "cudnnBackendExecute":
            continue
        block = text[start.end():starts[i + 1].start() if i + 1 < len(starts) else len(text)]
        operation = _OPERATION.search(block)
        if operation is None:
            continue  # a matmul, a pointwise graph, the call's returned status: no convolution
        engine = _ENGINE.search(block)
        if _NO_NOTES.search(block):
            notes = [n for n in _NOTE.findall(block) if "BEHAVIOR" in n]
        elif _HAS_NOTES.search(block):
            notes = _NOTE.findall(block)
        else:
            notes = None
        executes.append({
            "direction": DIRECTIONS[operation.group(1)],
            "engine_id": int(engine.group(1)) if engine else None,
            "knobs": {k: int(v) for k, v in _KNOB.findall(block)},
            "notes": sorted(set(notes)) if notes is not None else None,
            "dims": [[int(d) for d in dims.split(",") if d] for dims in _DIMS.findall(block)],
        })
    return executes


def algorithm_text(execute):
    """"cudnn engine 38 (SPLIT_K=1, TILEK=2; TENSOR_CORE)": an execution as an op record and
    the ledger name its algorithm ("notes unknown" where the log named none)."""
    knobs = ", ".join("%s=%d" % (k.replace("CUDNN_KNOB_TYPE_", ""), v)
                      for k, v in sorted(execute["knobs"].items()))
    if execute["notes"] is None:
        notes = "notes unknown"
    else:
        notes = ", ".join(n.replace("CUDNN_NUMERICAL_NOTE_", "").replace("CUDNN_BEHAVIOR_NOTE_", "")
                          for n in execute["notes"])
    engine = "?" if execute["engine_id"] is None else str(execute["engine_id"])
    detail = "; ".join(part for part in (knobs, notes) if part)
    return "cudnn engine %s%s" % (engine, " (%s)" % detail if detail else "")


def deterministic(execute):
    """Whether cuDNN says the engine gives the same bits every execution; None when the log
    named no notes for it."""
    if execute["notes"] is None:
        return None
    return "CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC" not in execute["notes"]


def math_type(execute):
    if execute["notes"] is None:
        return "unknown"
    return "tensor_op" if "CUDNN_NUMERICAL_NOTE_TENSOR_CORE" in execute["notes"] else "fma"


def executed(executes):
    """Per direction, the execution that ran: the last (autotuning executes candidates before)."""
    ran = {}
    for e in executes:
        ran[e["direction"]] = e
    return ran


def candidates(executes):
    """Per direction, the executions before the one that ran (cudnn.benchmark times each
    candidate plan by executing it): [(engine_id, deterministic)], in order."""
    ran = executed(executes)
    timed = {}
    for e in executes:
        if e is not ran[e["direction"]]:
            timed.setdefault(e["direction"], []).append((e["engine_id"], deterministic(e)))
    return timed


_SEV_ERROR_EN, _SEV_WARNING_EN, _SEV_INFO_EN = 1, 2, 4  # cudnn_graph.h CUDNN_SEV_*_EN


def _loaded_cudnn(maps="/proc/self/maps"):
    """The path of the libcudnn.so.9 this process has loaded (PyTorch's), or None: never one
    loaded here, which could be another copy than the one PyTorch calls."""
    try:
        with open(maps) as f:
            for line in f:
                path = line.rstrip("\n").split(" ")[-1]
                if os.path.basename(path).startswith("libcudnn.so"):
                    return path
    except OSError:
        pass
    return None


class ApiLogSwitch:
    """Turns cuDNN's API logging (its INFO messages) on and off while the process runs, through
    cudnnSetCallback on the cuDNN PyTorch loaded (the default callback keeps writing where
    CUDNN_LOGDEST_DBG says): exec sets CUDNN_LOGLEVEL_DBG=3 for the whole run, but the ledger
    needs only the op window's calls, and cuDNN logs about 130,000 lines a step under
    cudnn.benchmark (the real logs). Outside the window the log stops growing and the steps stop
    paying for it. Until PyTorch has loaded cuDNN (its first convolution) nothing can be
    switched, and cuDNN logs as the environment says."""

    def __init__(self):
        self._set = None
        self.quiet = False  # API logging switched off at least once

    def _function(self):
        if self._set is None:
            path = _loaded_cudnn()
            if path is None:
                return None
            import ctypes
            try:
                lib = ctypes.CDLL(path)
                self._set = lib.cudnnSetCallback
                self._set.argtypes = [ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p]
                self._set.restype = ctypes.c_int
            except (OSError, AttributeError):
                self._set = False
        return self._set or None

    def api_calls(self, on):
        """Logs cuDNN's API calls (on) or only its warnings and errors; False when cuDNN is not
        loaded yet (or has no switch)."""
        set_callback = self._function()
        if set_callback is None:
            return False
        mask = _SEV_ERROR_EN | _SEV_WARNING_EN | (_SEV_INFO_EN if on else 0)
        if set_callback(mask, None, None) != 0:
            return False
        self.quiet = self.quiet or not on
        return True


class CudnnLog:
    """The cuDNN API log of this process, when the environment makes cuDNN write one to a file
    the recorder can read; `why_not` says why not otherwise."""

    def __init__(self, environ=os.environ):
        self.path = environ.get("CUDNN_LOGDEST_DBG")
        level = environ.get("CUDNN_LOGLEVEL_DBG", environ.get("CUDNN_LOGINFO_DBG"))
        self.why_not = None
        if not self.path:
            self.why_not = "CUDNN_LOGDEST_DBG is not set: cuDNN writes no API log"
        elif self.path in ("stdout", "stderr"):
            self.why_not = "cuDNN logs to %s, which the recorder cannot read" % self.path
        elif level is None or not level.strip().isdigit() or int(level) < 3:
            self.why_not = ("CUDNN_LOGLEVEL_DBG is not 3: cuDNN logs no API calls (only "
                            "warnings and errors)")

    @property
    def usable(self):
        return self.why_not is None

    def offset(self):
        """The log's size now (0 before cuDNN first wrote it)."""
        try:
            return os.path.getsize(self.path)
        except OSError:
            return 0

    def executes_between(self, begin, end):
        if end <= begin:
            return []
        with open(self.path, "rb") as f:
            f.seek(begin)
            text = f.read(end - begin).decode("utf-8", "replace")
        return parse_executes(text)
