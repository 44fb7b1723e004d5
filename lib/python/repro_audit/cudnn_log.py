"""What cuDNN ran for each convolution of the op window, read from cuDNN's own API log
(docs/pytorch.md, "cuDNN ledger").

cuDNN reports every API call it receives, with its arguments, to a callback set with
cudnnSetCallback (CudnnCapture: the recorder's, for the op window's steps only), or, with
CUDNN_LOGLEVEL_DBG=3 and CUDNN_LOGDEST_DBG=<file>, writes the same text to the file (CudnnLog). PyTorch 2
runs convolutions through cuDNN's graph API, so each convolution it executes is one
`cudnnBackendExecute` call whose logged execution plan names the operation
(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD/BACKWARD_DATA/BACKWARD_FILTER_DESCRIPTOR), the
engine (`engine_id`), its knob choices (CUDNN_KNOB_TYPE_...) and its numerical notes
(CUDNN_NUMERICAL_NOTE_...: TENSOR_CORE, NONDETERMINISTIC...). The recorder notes where the
messages (or the log file) stand before and after each convolution op of the window and reads the
calls in between; with
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

The ledger (CudnnLedger) turns the executions read between a convolution op's start and end into
the op record's `algorithm` and the header's ledger, one entry per geometry (conv_key) and
direction; op_records.py calls it for the op window's convolutions.
"""
from typing import Any
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


def parse_executes(text: Any) -> Any:
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


def algorithm_text(execute: Any) -> Any:
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


def deterministic(execute: Any) -> Any:
    """Whether cuDNN says the engine gives the same bits every execution; None when the log
    named no notes for it."""
    if execute["notes"] is None:
        return None
    return "CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC" not in execute["notes"]


def math_type(execute: Any) -> Any:
    if execute["notes"] is None:
        return "unknown"
    return "tensor_op" if "CUDNN_NUMERICAL_NOTE_TENSOR_CORE" in execute["notes"] else "fma"


def executed(executes: Any) -> Any:
    """Per direction, the execution that ran: the last (autotuning executes candidates before)."""
    ran = {}
    for e in executes:
        ran[e["direction"]] = e
    return ran


def candidates(executes: Any) -> Any:
    """Per direction, the executions before the one that ran (cudnn.benchmark times each
    candidate plan by executing it): [(engine_id, deterministic)], in order."""
    ran = executed(executes)
    timed: Any = {}
    for e in executes:
        if e is not ran[e["direction"]]:
            timed.setdefault(e["direction"], []).append((e["engine_id"], deterministic(e)))
    return timed


# cudnn_graph.h: CUDNN_SEV_ERROR_EN = 1 << CUDNN_SEV_ERROR (1), WARNING 2, INFO (API calls) 3.
_SEV_ERROR_EN, _SEV_WARNING_EN, _SEV_INFO_EN = 1 << 1, 1 << 2, 1 << 3
_PREFIXES = {1: ("E! ", "e! "), 2: ("W! ", "w! "), 3: ("I! ", "i! ")}


def _loaded_cudnn(maps: Any = "/proc/self/maps") -> Any:
    """The path of the libcudnn.so this process has loaded (PyTorch's), or None: never one
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


def message_text(severity: Any, lines: Any) -> Any:
    """A message cuDNN hands its callback, its lines as received (split at NULs), as the block
    it would have written to CUDNN_LOGDEST_DBG: the first line after "I! ", the others after
    "i! " (W!/w! for warnings, E!/e! for errors), then a blank line."""
    first, rest = _PREFIXES.get(severity, ("I! ", "i! "))
    if not lines:
        return ""
    return "".join([first + lines[0] + "\n"] + [rest + l + "\n" for l in lines[1:]]) + "\n"


class CudnnCapture:
    """cuDNN's API messages, caught in memory through cudnnSetCallback on the cuDNN PyTorch
    loaded (no file, no environment variable, no logging outside the op window): start() before
    a window step's ops, stop() after it, which gives cuDNN back the callback, levels and
    destination it had. Between the two every API call cuDNN receives is one message, which is
    turned into the block the file log would hold (message_text), so the parser reads both
    alike. Measured on cuDNN 9.19 (its library on this machine, no GPU needed): the callback gets
    each call's lines separated by NULs, ending with two, without the "I!"/"i!" prefixes."""

    def __init__(self, library: Any = None, log_dest: Any = None) -> None:
        """`library`: cuDNN's shared library (default: the one this process loaded); `log_dest`:
        CUDNN_LOGDEST_DBG's value (settings.py), where cuDNN logs when the recorder does not."""
        self._library_path = library
        self._log_dest = log_dest
        self._set: Any = None
        self._get: Any = None
        self._original: Any = None
        self._callback: Any = None
        self._messages: Any = []
        self.active = False
        self.messages_seen = 0
        self.why_not: Any = None

    def _bind(self) -> Any:
        """Finds cuDNN's callback functions; False (and why_not) when it cannot."""
        if self._set is not None:
            return True
        import ctypes
        path = self._library_path or _loaded_cudnn()
        if path is None:
            self.why_not = "this process has loaded no cuDNN shared library"
            return False
        try:
            lib = ctypes.CDLL(path)
            set_callback, get_callback = lib.cudnnSetCallback, lib.cudnnGetCallback
        except (OSError, AttributeError) as e:
            self.why_not = "cuDNN's callback functions were not found in %s (%s)" % (path, e)
            return False
        set_callback.argtypes = [ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p]
        set_callback.restype = ctypes.c_int
        get_callback.argtypes = [ctypes.POINTER(ctypes.c_uint),
                                 ctypes.POINTER(ctypes.c_void_p),
                                 ctypes.POINTER(ctypes.c_void_p)]
        get_callback.restype = ctypes.c_int
        callback_type = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                         ctypes.c_void_p)
        self._callback = callback_type(self._receive)  # kept: cuDNN holds only its address
        self._set, self._get, self.why_not = set_callback, get_callback, None
        return True

    def _receive(self, severity: Any, udata: Any, debug: Any, message: Any) -> None:
        import ctypes
        self.messages_seen += 1
        if not message:
            return
        # Only executions are parsed: a convolution is about 37 API calls (descriptors made,
        # set, finalized, destroyed around one execute), and reading every line of each cost
        # ResNet-18's step with op records 58 ms of 310 on an H100. The first line is the header.
        first = ctypes.string_at(message)
        if b"cudnnBackendExecute" not in first:
            return
        lines, at = [], message
        while True:  # NUL-separated lines, an empty one at the end
            line = first if at == message else ctypes.string_at(at)
            if not line:
                break
            lines.append(line.decode("utf-8", "replace"))
            at += len(line) + 1
        self._messages.append(message_text(severity, lines))

    @property
    def usable(self) -> Any:
        return self.why_not is None

    def start(self) -> Any:
        """Catches every API call from now on; False when cuDNN is not at hand (why_not)."""
        if self.active:
            return True
        if not self._bind():
            return False
        import ctypes
        mask, udata, function = ctypes.c_uint(), ctypes.c_void_p(), ctypes.c_void_p()
        if self._get(ctypes.byref(mask), ctypes.byref(udata), ctypes.byref(function)) != 0:
            self.why_not = "cudnnGetCallback failed"
            return False
        self._original = (mask.value, udata.value, function.value)
        on = _SEV_ERROR_EN | _SEV_WARNING_EN | _SEV_INFO_EN
        if self._set(on, None, ctypes.cast(self._callback, ctypes.c_void_p)) != 0:
            self.why_not = "cudnnSetCallback failed"
            return False
        self.active = True
        return True

    def stop(self) -> None:
        """Gives cuDNN back what it had before start(), and forgets the messages. cuDNN keeps
        errors on whatever mask it is given (cudnnSetCallback(0, ...) reads back as 2), and its
        default callback then prints them to stdout, which a process that logged nothing before
        must not start doing (cudnn.benchmark meets NOT_SUPPORTED engines by the dozen). So where
        nothing was logged, the callback left behind is libc's getpid: C code that ignores its
        arguments and does nothing, so no Python runs inside cuDNN, even at interpreter exit."""
        if self.active:
            mask, udata, function = self._original
            if function is None and mask & ~_SEV_ERROR_EN == 0 and not self._log_dest:
                import ctypes
                sink = ctypes.cast(ctypes.CDLL(None).getpid, ctypes.c_void_p)
                self._set(_SEV_ERROR_EN, None, sink)
            else:
                self._set(mask, udata, function)
            self.active = False
        self._messages = []

    def offset(self) -> Any:
        return len(self._messages)

    def executes_between(self, begin: Any, end: Any) -> Any:
        if end <= begin:
            return []
        return parse_executes("".join(self._messages[begin:end]))


class CudnnLog:
    """The cuDNN API log of this process, when the environment makes cuDNN write one to a file
    the recorder can read; `why_not` says why not otherwise. The fallback of CudnnCapture where
    cuDNN's callback cannot be reached (a cuDNN linked statically); start() and stop() do
    nothing: the environment decides what cuDNN logs."""

    active = True

    def start(self) -> Any:
        return self.usable

    def stop(self) -> None:
        pass

    def __init__(self, path: Any = None, level: Any = None) -> None:
        """`path`: CUDNN_LOGDEST_DBG's value; `level`: CUDNN_LOGLEVEL_DBG's, else
        CUDNN_LOGINFO_DBG's (settings.py)."""
        self.path = path
        self.why_not = None
        if not self.path:
            self.why_not = "CUDNN_LOGDEST_DBG is not set: cuDNN writes no API log"
        elif self.path in ("stdout", "stderr"):
            self.why_not = "cuDNN logs to %s, which the recorder cannot read" % self.path
        elif level is None or not level.strip().isdigit() or int(level) < 3:
            self.why_not = ("CUDNN_LOGLEVEL_DBG is not 3: cuDNN logs no API calls (only "
                            "warnings and errors)")

    @property
    def usable(self) -> Any:
        return self.why_not is None

    def offset(self) -> Any:
        """The log's size now (0 before cuDNN first wrote it)."""
        try:
            return os.path.getsize(self.path)
        except OSError:
            return 0

    def executes_between(self, begin: Any, end: Any) -> Any:
        if end <= begin:
            return []
        with open(self.path, "rb") as f:
            f.seek(begin)
            text = f.read(end - begin).decode("utf-8", "replace")
        return parse_executes(text)


def source(log_dest: Any = None, log_level: Any = None) -> Any:
    """Where the op records read what cuDNN executed: its callback (CudnnCapture) when this
    process has a cuDNN shared library loaded, else the file log the environment names
    (CudnnLog: `log_dest` and `log_level`, CUDNN_LOGDEST_DBG's and CUDNN_LOGLEVEL_DBG's values),
    else a capture that will look for cuDNN again when the window starts."""
    if _loaded_cudnn() is None:
        log = CudnnLog(log_dest, log_level)
        if log.usable:
            return log
    return CudnnCapture(log_dest=log_dest)


def conv_key(torch: Any, func: Any, args: Any) -> Any:
    """The geometry of a convolution call as a ledger keys it, "conv 128x32x26x26 k64 3x3 s1 p0"
    (the engine's form), from the input's and the weight's shapes and the stride and padding."""
    backward = func.overloadpacket.__name__.endswith("_backward")
    x, w = (args[1], args[2]) if backward else (args[0], args[1])
    stride, padding = (args[4], args[5]) if backward else (args[3], args[4])

    def joined(values: Any) -> Any:
        values = list(values)
        return str(values[0]) if len(set(values)) == 1 else "x".join(str(v) for v in values)
    return "conv %s k%d %s s%s p%s" % ("x".join(str(d) for d in x.shape), w.shape[0],
                                       "x".join(str(d) for d in w.shape[2:]), joined(stride),
                                       joined(padding))


class CudnnLedger:
    """What cuDNN executed for the op window's convolutions (op_records.py names each record's
    algorithm through it), and the ledger of the trace's header, one entry per geometry and
    direction."""

    def __init__(self, torch: Any, log: Any) -> None:
        self._torch = torch
        self.log = log
        self.entries: Any = []
        self.executions = 0

    def name(self, record: Any, func: Any, args: Any, executes: Any) -> None:
        """Names in `record` what the call executed (the last execution per direction)."""
        ran = executed(executes)
        if not ran:
            return
        self.executions += 1
        key = conv_key(self._torch, func, args)
        chooser = "cudnn.benchmark" if self._torch.backends.cudnn.benchmark else "heuristic"
        texts = []
        for direction in ("forward", "backward_data", "backward_filter"):
            if direction not in ran:
                continue
            e = ran[direction]
            text = algorithm_text(e)
            texts.append(text if len(ran) == 1 else "%s: %s" % (direction, text))
            entry = {"layer": key, "direction": direction, "algorithm": text,
                     "engine": -1 if e["engine_id"] is None else e["engine_id"],
                     "deterministic": deterministic(e),
                     "math_type": math_type(e), "chosen_by": chooser}
            known = [x for x in self.entries
                     if x["layer"] == key and x["direction"] == direction]
            if not known or known[-1]["algorithm"] != text:
                self.entries.append(entry)  # a later choice is appended: the last one counts
        record["ledger_key"] = key
        record["algorithm"] = "; ".join(texts)
        record["algorithm_deterministic"] = all(deterministic(e) for e in ran.values())

    def note(self) -> Any:
        """What the ledger holds, in words, for the trace's environment."""
        if not self.log.usable:
            return "not recorded: " + self.log.why_not
        if not self.executions:
            return "no convolution executed through cuDNN's graph API in the op window"
        how = ("cuDNN's API messages (cudnnSetCallback, in the op window)"
               if isinstance(self.log, CudnnCapture) else "cuDNN's API log")
        return "read from %s: %d convolution calls" % (how, self.executions)
