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

The parser reads blocks ("I! CuDNN (v91900) function cudnnBackendExecute() called:" and the
"i!" lines under it) and finds those facts by their names, whatever the nesting and indentation
of the version writing them.
"""
import os
import re

_BLOCK = re.compile(r"^[IWE]! CuDNN \(v\d+\) function (\w+)\(\) called:", re.M)
_OPERATION = re.compile(r"CUDNN_BACKEND_OPERATION_(CONVOLUTION_(?:FORWARD|BACKWARD_DATA|"
                        r"BACKWARD_FILTER))_DESCRIPTOR")
_ENGINE = re.compile(r"\bengine_id: type=int; val=(-?\d+);")
_KNOB = re.compile(r"\b(CUDNN_KNOB_TYPE_\w+): type=int(?:64_t)?; val=(-?\d+);")
_NOTE = re.compile(r"\b(CUDNN_(?:NUMERICAL|BEHAVIOR)_NOTE_\w+): type=bool; val=true;")

DIRECTIONS = {"CONVOLUTION_FORWARD": "forward", "CONVOLUTION_BACKWARD_DATA": "backward_data",
              "CONVOLUTION_BACKWARD_FILTER": "backward_filter"}


def parse_executes(text):
    """The convolution executions of a piece of log, in order: dicts with `direction`
    ("forward", "backward_data", "backward_filter"), `engine_id` (None when the block names
    none), `knobs` {name: value} and `notes` [names], sorted."""
    executes = []
    starts = list(_BLOCK.finditer(text))
    for i, start in enumerate(starts):
        if start.group(1) != "cudnnBackendExecute":
            continue
        block = text[start.end():starts[i + 1].start() if i + 1 < len(starts) else len(text)]
        operation = _OPERATION.search(block)
        if operation is None:
            continue  # a matmul, a pointwise graph: not a convolution
        engine = _ENGINE.search(block)
        executes.append({
            "direction": DIRECTIONS[operation.group(1)],
            "engine_id": int(engine.group(1)) if engine else None,
            "knobs": {k: int(v) for k, v in _KNOB.findall(block)},
            "notes": sorted(set(_NOTE.findall(block))),
        })
    return executes


def algorithm_text(execute):
    """"cudnn engine 38 (SPLIT_K=1, TILEK=2; TENSOR_CORE)": an execution as an op record and
    the ledger name its algorithm."""
    knobs = ", ".join("%s=%d" % (k.replace("CUDNN_KNOB_TYPE_", ""), v)
                      for k, v in sorted(execute["knobs"].items()))
    notes = ", ".join(n.replace("CUDNN_NUMERICAL_NOTE_", "").replace("CUDNN_BEHAVIOR_NOTE_", "")
                      for n in execute["notes"])
    engine = "?" if execute["engine_id"] is None else str(execute["engine_id"])
    detail = "; ".join(part for part in (knobs, notes) if part)
    return "cudnn engine %s%s" % (engine, " (%s)" % detail if detail else "")


def deterministic(execute):
    """Whether cuDNN says the engine gives the same bits every execution."""
    return "CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC" not in execute["notes"]


def math_type(execute):
    return "tensor_op" if "CUDNN_NUMERICAL_NOTE_TENSOR_CORE" in execute["notes"] else "fma"


def executed(executes):
    """Per direction, the execution that ran: the last (autotuning executes candidates before)."""
    ran = {}
    for e in executes:
        ran[e["direction"]] = e
    return ran


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
