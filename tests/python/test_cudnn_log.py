"""The cuDNN ledger of PyTorch runs (lib/python/repro_audit/cudnn_log.py, CudnnLedger) on the
CPU. First on real logs: cuDNN 9.19's API log of the example convnet on an H100, with
`cudnn.benchmark` and with deterministic algorithms (tests/python/data/cudnn-logs, from
shared/fixtures/h100-2026-11-27; their counts checked against grep of the same files, not against
this parser). Then on blocks in the layout cuDNN writes, for what the real logs do not hold: the
last execution per direction is the one that ran, a header the parser cannot read is an error,
and a convolution op's record and the header's ledger name what ran."""
import gzip
import os
import re
from collections import Counter

import pytest

torch = pytest.importorskip("torch")
from repro_audit import cudnn_log, op_records  # noqa: E402  (PYTHONPATH=lib/python)
from repro_audit.settings import Settings  # noqa: E402

LOGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "cudnn-logs")


def real_log(name):
    with gzip.open(os.path.join(LOGS, name), "rt", encoding="utf-8") as f:
        return f.read()


@pytest.fixture(scope="module")
def deterministic_log():
    return real_log("cudnn-deterministic.log.gz")


@pytest.fixture(scope="module")
def benchmark_log():
    return real_log("cudnn-benchmark.log.gz")


def test_a_real_cudnn_9_19_log_is_read_header_and_all(deterministic_log):
    # The headers cuDNN 9.19 writes carry the build after the version: "(v91900 56)".
    assert "I! CuDNN (v91900 56) function cudnnBackendExecute() called:" in deterministic_log
    executes = cudnn_log.parse_executes(deterministic_log)
    # One cudnnBackendExecuteInternal per convolution executed (grep -c of the file: 15):
    # 3 steps x (2 forward, 1 backward data, 2 backward filter).
    assert len(executes) == deterministic_log.count("function cudnnBackendExecuteInternal()") == 15
    per_step = Counter((e["direction"], e["engine_id"], tuple(e["dims"][0])) for e in executes)
    assert per_step == {("forward", 70, (128, 1, 28, 28)): 3,
                        ("forward", 38, (128, 32, 26, 26)): 3,
                        ("backward_data", 71, (128, 32, 26, 26)): 3,
                        ("backward_filter", 34, (128, 32, 26, 26)): 3,
                        ("backward_filter", 40, (128, 1, 28, 28)): 3}
    # Engine 70 is logged with "numericalNotes: ...; val=NULL_PTR;": no note, so deterministic.
    first = executes[0]
    assert first["notes"] == [] and cudnn_log.deterministic(first) is True
    assert cudnn_log.math_type(first) == "fma"
    assert cudnn_log.algorithm_text(first) == "cudnn engine 70 (IDX_MODE=0, TILE_SIZE=2)"
    assert all(cudnn_log.deterministic(e) is True for e in executes)
    assert cudnn_log.math_type(executes[1]) == "tensor_op"


def test_the_benchmark_log_holds_every_timed_candidate_and_the_nondeterministic_ones(
        benchmark_log):
    executes = cudnn_log.parse_executes(benchmark_log)
    assert len(executes) == benchmark_log.count("function cudnnBackendExecuteInternal()") == 115
    nondeterministic = [e for e in executes if cudnn_log.deterministic(e) is False]
    # grep: two execute blocks of engine 20 carry CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC.
    assert [(e["direction"], e["engine_id"]) for e in nondeterministic] == [
        ("backward_filter", 20)] * 2
    # cudnn.benchmark executes every candidate before the plan it keeps: per direction the last.
    timed = cudnn_log.candidates(executes)
    assert (20, False) in timed["backward_filter"]
    ran = cudnn_log.executed(executes)
    assert ran["backward_filter"]["engine_id"] != 20
    assert all(cudnn_log.deterministic(e) is not None for e in executes)


def test_an_execution_whose_block_names_no_notes_is_of_unknown_determinism():
    block = execute_block("CONVOLUTION_FORWARD", 12).replace(
        "i!                 numericalNotes: type=cudnnBackendDescriptor_t:\n", "")
    (execute,) = cudnn_log.parse_executes(block)
    assert execute["notes"] is None and cudnn_log.deterministic(execute) is None
    assert cudnn_log.algorithm_text(execute) == "cudnn engine 12 (notes unknown)"
    assert cudnn_log.math_type(execute) == "unknown"


def test_a_header_the_parser_cannot_read_is_an_error_that_names_it(deterministic_log):
    # A cuDNN that wrote its headers otherwise: the executions must not vanish into an empty
    # ledger.
    changed = re.sub(r"([IW])! CuDNN \(v91900 56\) function (\w+)\(\) called:",
                     r"\1! CuDNN [9.19.0] \2 called:", deterministic_log)
    with pytest.raises(cudnn_log.CudnnLogError, match=r"I! CuDNN \[9\.19\.0\] cudnnGetVersion"):
        cudnn_log.parse_executes(changed)
    # One header of another form among readable ones is named too.
    one = deterministic_log.replace("I! CuDNN (v91900 56) function cudnnBackendExecute() called:",
                                    "I! CuDNN (v10.0-rc) function cudnnBackendExecute() called:", 1)
    with pytest.raises(cudnn_log.CudnnLogError, match=r"v10\.0-rc"):
        cudnn_log.parse_executes(one)
    # A log without executions is no error: nothing ran through the graph API.
    assert cudnn_log.parse_executes(deterministic_log[:2000]) == []


def execute_block(operation, engine, knobs=(), notes=(), indent="    "):
    """One cudnnBackendExecute call as cuDNN logs it (the plan's nesting abridged)."""
    lines = ["I! CuDNN (v91900) function cudnnBackendExecute() called:",
             "i!     handle: type=cudnnHandle_t; streamId=0x5;",
             "i!     executionPlan: type=CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:",
             "i!         engineConfig: type=CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:",
             "i!             engine: type=CUDNN_BACKEND_ENGINE_DESCRIPTOR:",
             "i!                 opGraph: type=CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:",
             "i!                     ops: type=CUDNN_BACKEND_OPERATION_%s_DESCRIPTOR:" % operation,
             "i!                         math_prec: type=cudnnDataType_t; val=CUDNN_DATA_FLOAT (0);",
             "i!                 engine_id: type=int; val=%d;" % engine,
             "i!                 knobDesc: type=cudnnBackendDescriptor_t:"]
    lines += ["i!                     %s: type=int; val=%d;" % k for k in knobs]
    lines += ["i!                 numericalNotes: type=cudnnBackendDescriptor_t:"]
    lines += ["i!                     %s: type=bool; val=true;" % n for n in notes]
    lines += ["i!     variantPack: type=CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:",
              "i! Time: 2026-11-26T10:00:00.000000 (0d+0h+0m+1s since start)",
              "i! Process=100; Thread=100; GPU=0; Handle=0x1; StreamId=0x5.", ""]
    return "\n".join(lines).replace("    ", indent) + "\n"


OTHER_CALL = """I! CuDNN (v91900) function cudnnBackendGetAttribute() called:
i!     descriptor: type=CUDNN_BACKEND_ENGINE_DESCRIPTOR:
i!         engine_id: type=int; val=99;
i!         ops: type=CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
i! Time: 2026-11-26T10:00:00.000000 (0d+0h+0m+1s since start)

"""


def test_executes_are_read_by_their_names_whatever_the_nesting():
    text = (OTHER_CALL +
            execute_block("CONVOLUTION_FORWARD", 38, [("CUDNN_KNOB_TYPE_SPLIT_K", 1)],
                          ["CUDNN_NUMERICAL_NOTE_TENSOR_CORE"]) +
            execute_block("MATMUL", 5) +
            execute_block("CONVOLUTION_BACKWARD_FILTER", 34, [],
                          ["CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC"], indent="  "))
    executes = cudnn_log.parse_executes(text)
    assert [(e["direction"], e["engine_id"]) for e in executes] == [("forward", 38),
                                                                   ("backward_filter", 34)]
    assert executes[0]["knobs"] == {"CUDNN_KNOB_TYPE_SPLIT_K": 1}
    assert cudnn_log.algorithm_text(executes[0]) == "cudnn engine 38 (SPLIT_K=1; TENSOR_CORE)"
    assert cudnn_log.deterministic(executes[0]) and not cudnn_log.deterministic(executes[1])
    assert cudnn_log.math_type(executes[0]) == "tensor_op"
    assert cudnn_log.math_type(executes[1]) == "fma"


def test_autotuning_executes_candidates_first_the_last_one_ran():
    text = "".join(execute_block("CONVOLUTION_BACKWARD_DATA", e) for e in (1, 7, 71)) + \
        execute_block("CONVOLUTION_BACKWARD_FILTER", 34)
    ran = cudnn_log.executed(cudnn_log.parse_executes(text))
    assert ran["backward_data"]["engine_id"] == 71 and ran["backward_filter"]["engine_id"] == 34


def test_a_log_the_recorder_cannot_read_says_why(tmp_path):
    def log_of(environment):
        read = Settings.from_environment(environment)
        return cudnn_log.CudnnLog(read.cudnn_log_dest, read.cudnn_log_level)
    assert "not set" in log_of({}).why_not
    assert "stderr" in log_of({"CUDNN_LOGDEST_DBG": "stderr", "CUDNN_LOGLEVEL_DBG": "3"}).why_not
    assert "not 3" in log_of({"CUDNN_LOGDEST_DBG": str(tmp_path / "l"),
                              "CUDNN_LOGLEVEL_DBG": "2"}).why_not
    log = log_of({"CUDNN_LOGDEST_DBG": str(tmp_path / "l"), "CUDNN_LOGLEVEL_DBG": "3"})
    assert log.usable and log.offset() == 0  # cuDNN has not written yet


class LoggingOp:
    """A real aten op that, called, first appends what cuDNN would log for it: the recorder sees
    the log grow during the call, as on a GPU."""

    def __init__(self, op, path, text):
        self._op, self._path, self._text = op, path, text

    def __getattr__(self, name):
        return getattr(self._op, name)

    def __str__(self):
        return str(self._op)

    def __call__(self, *args, **kwargs):
        with open(self._path, "a") as f:
            f.write(self._text)
        return self._op(*args, **kwargs)


def test_a_convolution_record_and_the_ledger_name_what_cudnn_ran(tmp_path):
    path = tmp_path / "cudnn-api.log"
    log = cudnn_log.CudnnLog(str(path), "3")
    ledger = cudnn_log.CudnnLedger(torch, log)
    model = torch.nn.Conv2d(1, 4, 3)
    recording = op_records.OpRecording(torch, model, None, (0, None), cudnn=ledger)
    x = torch.randn(2, 1, 6, 6, requires_grad=True)
    forward = LoggingOp(torch.ops.aten.convolution.default, path,
                        execute_block("CONVOLUTION_FORWARD", 38))
    backward = LoggingOp(torch.ops.aten.convolution_backward.default, path,
                         "".join(execute_block("CONVOLUTION_BACKWARD_FILTER", e,
                                               notes=["CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC"])
                                 for e in (3, 34)) +
                         execute_block("CONVOLUTION_BACKWARD_DATA", 71))
    # Called as the dispatch mode calls it (the mode itself not entered: the op's own call
    # would be recorded again inside).
    y = recording.call(forward, (x, model.weight, model.bias, [1, 1], [0, 0], [1, 1], False,
                                 [0, 0], 1), {})
    recording.call(backward, (torch.ones_like(y), x, model.weight, [4], [1, 1], [0, 0], [1, 1],
                              False, [0, 0], 1, [True, True, True]), {})
    records = recording._records
    conv = [r for r in records if r["op"] == "aten.convolution.default"][0]
    assert conv["ledger_key"] == "conv 2x1x6x6 k4 3x3 s1 p0"
    assert conv["algorithm"] == "cudnn engine 38" and conv["algorithm_deterministic"]
    grad = [r for r in records if r["op"] == "aten.convolution_backward.default"][0]
    assert grad["algorithm"] == ("backward_data: cudnn engine 71; backward_filter: cudnn engine "
                                 "34 (NONDETERMINISTIC)")
    assert grad["algorithm_deterministic"] is False
    assert [(e["direction"], e["algorithm"], e["deterministic"]) for e in ledger.entries] == [
        ("forward", "cudnn engine 38", True),
        ("backward_data", "cudnn engine 71", True),
        ("backward_filter", "cudnn engine 34 (NONDETERMINISTIC)", False)]
    assert ledger.entries[0]["chosen_by"] == "heuristic"
    assert ledger.note() == "read from cuDNN's API log: 2 convolution calls"


def test_the_capture_finds_only_the_cudnn_this_process_loaded(tmp_path):
    maps = tmp_path / "maps"
    maps.write_text("7f00-7f01 r-xp 00000000 08:01 42 /usr/lib/libc.so.6\n"
                    "7f02-7f03 r-xp 00000000 08:01 43 /site/nvidia/cudnn/lib/libcudnn.so.9\n")
    assert cudnn_log._loaded_cudnn(str(maps)) == "/site/nvidia/cudnn/lib/libcudnn.so.9"
    maps.write_text("7f00-7f01 r-xp 00000000 08:01 42 /usr/lib/libc.so.6\n")
    assert cudnn_log._loaded_cudnn(str(maps)) is None
    if cudnn_log._loaded_cudnn() is None:  # Debian's PyTorch: no cuDNN in this process
        capture = cudnn_log.CudnnCapture()
        assert capture.start() is False and "no cuDNN shared library" in capture.why_not


CUDNN = "/usr/local/cuda/lib64/libcudnn.so.9"  # the toolkit's cuDNN: its host API needs no GPU


def test_the_capture_reads_real_cudnn_messages_as_the_log_file_holds_them():
    import ctypes
    if not os.path.exists(CUDNN):
        pytest.skip("no cuDNN under /usr/local/cuda here")
    lib = ctypes.CDLL(CUDNN)
    mask, udata, function = ctypes.c_uint(), ctypes.c_void_p(), ctypes.c_void_p()
    lib.cudnnGetCallback(ctypes.byref(mask), ctypes.byref(udata), ctypes.byref(function))
    before = (mask.value, udata.value, function.value)
    capture = cudnn_log.CudnnCapture(library=CUDNN)
    assert capture.start()
    first, seen = capture.offset(), capture.messages_seen
    descriptor = ctypes.c_void_p()
    assert lib.cudnnCreateTensorDescriptor(ctypes.byref(descriptor)) == 0
    assert lib.cudnnSetTensor4dDescriptor(descriptor, 0, 0, 2, 3, 4, 5) == 0
    lib.cudnnDestroyTensorDescriptor(descriptor)
    # Every call reaches the callback; only executions are kept for the parser.
    assert capture.messages_seen >= seen + 3 and capture.offset() == first
    # An execution (refused without a handle: no GPU needed) is kept, in the file's layout.
    assert lib.cudnnBackendExecute(None, None, None) != 0
    text = "".join(capture._messages[first:capture.offset()])
    assert re.search(r"^I! CuDNN \(v\d+ \d+\) function cudnnBackendExecute\(\) called:\n"
                     r"i!     handle: type=cudnnHandle_t; val=NULL_PTR;\n", text, re.M), text[:400]
    assert capture.executes_between(first, capture.offset()) == []  # no convolution, no error
    capture.stop()
    lib.cudnnGetCallback(ctypes.byref(mask), ctypes.byref(udata), ctypes.byref(function))
    if before[0] & ~2 == 0 and before[2] is None:
        # Nothing was logged before: errors only (cuDNN keeps them), into a C no-op, so that
        # cuDNN does not start printing its errors to stdout.
        assert mask.value == 2 and function.value is not None
    else:
        assert (mask.value, udata.value, function.value) == before
    seen = capture.messages_seen
    assert lib.cudnnCreateTensorDescriptor(ctypes.byref(descriptor)) == 0
    lib.cudnnDestroyTensorDescriptor(descriptor)
    assert capture.messages_seen == seen and capture.offset() == 0  # stopped: nothing caught


def test_a_message_becomes_the_block_the_file_would_hold():
    assert cudnn_log.message_text(3, ["CuDNN (v91900 56) function cudnnGetVersion() called:",
                                      "Time: 2026-11-27T09:31:30.033160"]) == (
        "I! CuDNN (v91900 56) function cudnnGetVersion() called:\n"
        "i! Time: 2026-11-27T09:31:30.033160\n\n")
    assert cudnn_log.message_text(2, ["CuDNN (v91900 56) function f() called:"]).startswith(
        "W! CuDNN")
