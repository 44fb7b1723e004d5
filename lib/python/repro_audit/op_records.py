"""Op records of a PyTorch run (docs/pytorch.md, "Op records"; the trace's version 2).

With REPRO_AUDIT_TRACE_OPS=A:B (what `repro-audit exec --trace-ops A:B` sets), the recorder enters
a TorchDispatchMode for steps A..B-1 and writes one record per aten call, in execution order,
forward, backward and optimizer: the op ("aten.convolution.default"), where it ran
(op_places.py), the digests and types of its inputs and outputs (op_digests.py). Within a step a
tensor an earlier record digested, and nothing wrote since (its version counter and storage
say), is not digested again.

Ops whose result depends on the order of a floating-point sum (reductions, products of matrices,
convolutions, accumulating scatters and index ops, normalisations) may differ between runs on
identical inputs; the outputs of those the recorder keeps, up to a budget per run (first steps
first), in `kept-outputs.bin` of the run's snapshot folder, for the magnitude of a root cause.
"""
from typing import Any
import json
import os
import time
import weakref

from . import device_digest, kept_op, op_digests
from .op_places import OpPlaces
# The window's text is read with the other settings (REPRO_AUDIT_TRACE_OPS, settings.py); the
# names stay here too, where the op records' readers look for them.
from .settings import DEFAULT_KEEP_BYTES, MAX_STEP, parse_window  # noqa: F401
from .trace import write_whole

# Base names (the overload packet's, without a trailing "_") of the ops whose outputs are kept.
ORDER_DEPENDENT = frozenset("""
sum mean nansum prod cumsum cumprod logsumexp var std var_mean std_mean norm linalg_vector_norm
mm addmm bmm baddbmm addbmm matmul mv addmv dot vdot linear
convolution _convolution convolution_backward cudnn_convolution cudnn_convolution_transpose
cudnn_convolution_backward mkldnn_convolution _slow_conv2d_forward _slow_conv2d_backward
slow_conv3d_forward conv_depthwise2d _conv_depthwise2d
index_add scatter_add scatter_reduce index_put _index_put_impl put index_reduce
embedding_dense_backward _embedding_bag _embedding_bag_backward _embedding_bag_dense_backward
histc bincount _softmax _log_softmax _softmax_backward_data _log_softmax_backward_data
nll_loss_forward nll_loss_backward nll_loss2d_forward nll_loss2d_backward mse_loss
mse_loss_backward binary_cross_entropy binary_cross_entropy_backward smooth_l1_loss kl_div
native_batch_norm native_batch_norm_backward _native_batch_norm_legit cudnn_batch_norm
cudnn_batch_norm_backward native_layer_norm native_layer_norm_backward native_group_norm
native_group_norm_backward avg_pool2d_backward avg_pool3d_backward _adaptive_avg_pool2d
_adaptive_avg_pool2d_backward adaptive_max_pool2d_backward max_pool2d_with_indices_backward
upsample_bilinear2d_backward upsample_nearest2d_backward grid_sampler_2d_backward ctc_loss
_ctc_loss_backward _scaled_dot_product_attention_math _scaled_dot_product_flash_attention
_scaled_dot_product_efficient_attention _flash_attention_backward _efficient_attention_backward
""".split())

# Ops that draw from a random generator without naming it in their schema (those with a
# `generator` argument are known by it).
RANDOM = frozenset("""
randperm randint randn rand rand_like randn_like randint_like random uniform normal bernoulli
exponential geometric cauchy log_normal multinomial native_dropout _fused_dropout rrelu_with_noise
poisson _standard_gamma _sample_dirichlet binomial
""".split())

# Ops whose outputs are memory nobody wrote yet: their bits are whatever was there, so they are
# recorded as "uninitialized", not by their values.
UNINITIALIZED = frozenset("empty empty_like empty_strided new_empty new_empty_strided".split())

# Ops that run convolutions (through cuDNN on a GPU): their records name what cuDNN executed.
CONVOLUTIONS = frozenset("""
convolution _convolution convolution_backward cudnn_convolution cudnn_convolution_transpose
""".split())

KEPT_FILE_NAME = "kept-outputs.bin"
TRACE_SUFFIX = ".trace.jsonl"


def in_window(window: Any, step: Any) -> Any:
    first, last = window
    return step >= first and (last is None or step < last)


def kept_outputs_path(trace_path: Any) -> Any:
    """Where a run keeps outputs: its snapshot folder (the trace's name without .trace.jsonl), as
    `repro-audit compare` looks for them; None for a trace named otherwise."""
    if not trace_path.endswith(TRACE_SUFFIX) or len(trace_path) == len(TRACE_SUFFIX):
        return None
    return os.path.join(trace_path[:-len(TRACE_SUFFIX)], KEPT_FILE_NAME)


def _base_name(func: Any) -> Any:
    name = func.overloadpacket.__name__
    return name[:-1] if name.endswith("_") and not name.endswith("__") else name


def _storage_ptr(tensor: Any) -> Any:
    """Where the tensor's storage begins (its address less its offset: Tensor.storage() would
    build a Python storage object per call)."""
    try:
        return tensor.data_ptr() - tensor.storage_offset() * tensor.element_size()
    except (RuntimeError, NotImplementedError):
        return None


def _leaves(value: Any, out: Any) -> Any:
    """The leaves of nested lists, tuples and dicts, in order (what an op's arguments and
    results are made of; torch's pytree does the same, slower)."""
    if isinstance(value, (list, tuple)):
        for v in value:
            _leaves(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _leaves(v, out)
    else:
        out.append(value)
    return out


class KeptOutputs:
    """The outputs kept by one run, within its budget (the module's documentation). A GPU run's
    stay on the device until its step ends, then come back in one copy (settle)."""

    def __init__(self, budget: Any) -> None:
        self._budget = budget
        self._used = 0
        self._full = False
        self.entries: Any = []  # (step, index, [(dtype name, bytes or a flat u8 device tensor)])

    @property
    def full(self) -> Any:
        """The budget ran out: nothing more is kept (first steps first)."""
        return self._full

    def keep(self, step: Any, index: Any, outputs: Any, whatever_the_budget: Any = False) -> Any:
        """Keeps the outputs of op `index` of `step`, within the budget (first steps first), or
        whatever the budget for the op a --keep-op asked for."""
        size = sum(b.numel() if hasattr(b, "numel") else len(b) for _, b in outputs)
        if whatever_the_budget:
            self.entries.append((step, index, outputs))
            return True
        if self._full or self._used + size > self._budget:
            self._full = True  # first steps first: nothing later once the budget ran out
            return False
        self._used += size
        self.entries.append((step, index, outputs))
        return True

    def settle(self, torch: Any) -> None:
        """Every output still on the device, copied to the host at once (one wait)."""
        waiting = [(i, j, b) for i, (_, _, outputs) in enumerate(self.entries)
                   for j, (_, b) in enumerate(outputs) if hasattr(b, "numel")]
        if not waiting:
            return
        # Views of one host copy, not bytes: a copy of 64 MiB (tobytes, then one per slice) cost
        # ResNet-18's step with op records about 80 ms on an H100.
        joined = memoryview(torch.cat([b for _, _, b in waiting]).to("cpu").numpy())
        at = 0
        for i, j, b in waiting:
            step, index, outputs = self.entries[i]
            outputs[j] = (outputs[j][0], joined[at:at + b.numel()])
            at += b.numel()

    def write(self, path: Any, audit_id: Any, run_index: Any) -> None:
        """The file `repro-audit compare` reads (docs/trace-format.md "Kept outputs"): a JSON
        line, then per entry a JSON line and the outputs' bytes; written whole."""
        parts = [json.dumps({"record": "kept_outputs", "format_version": 1,
                             "audit_id": audit_id or "", "run_index": run_index,
                             "entries": len(self.entries)}, sort_keys=True).encode() + b"\n"]
        for step, index, outputs in self.entries:
            line = {"step": step, "index": index,
                    "outputs": [{"dtype": d, "bytes": len(b)} for d, b in outputs]}
            parts.append(json.dumps(line, sort_keys=True).encode() + b"\n")
            parts.extend(b for _, b in outputs)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_whole(path, b"".join(parts))


class _DigestCache:
    """Digests of the tensors seen in this step, valid while nothing wrote them. An entry holds
    the tensor weakly (alive, its storage cannot be another's) with its version counter; found by
    the tensor, or, for a contiguous one, by its bytes' place (storage, address, count, dtype), so
    a view of the same bytes (detach, view, reshape) is not digested again. An op's writes
    forget every entry on the storage it wrote (a view made otherwise may not share the counter).
    """

    def __init__(self) -> None:
        self._by_tensor: Any = {}
        self._by_place: Any = {}
        self._by_storage: Any = {}  # storage -> the keys of its entries in both tables

    @staticmethod
    def _place(tensor: Any) -> Any:
        if not tensor.is_contiguous():
            return None
        return (_storage_ptr(tensor), tensor.data_ptr(), tensor.numel(), tensor.dtype)

    @staticmethod
    def _valid(entry: Any) -> Any:
        owner = entry[0]()
        try:
            return owner is not None and owner._version == entry[1]
        except RuntimeError:  # inference tensors have no version counter
            return False

    def get(self, tensor: Any) -> Any:
        entry = self._by_tensor.get(id(tensor))
        if entry is not None and entry[0]() is tensor and self._valid(entry):
            return entry[3]
        place = self._place(tensor)
        entry = self._by_place.get(place) if place is not None else None
        return entry[3] if entry is not None and self._valid(entry) else None

    def put(self, tensor: Any, digest: Any) -> None:
        try:
            entry = (weakref.ref(tensor), tensor._version, _storage_ptr(tensor), digest)
        except (RuntimeError, TypeError):
            return
        self._by_tensor[id(tensor)] = entry
        keys = self._by_storage.setdefault(entry[2], [])
        keys.append((self._by_tensor, id(tensor)))
        place = self._place(tensor)
        if place is not None:
            self._by_place[place] = entry
            keys.append((self._by_place, place))

    def forget_storage(self, tensor: Any) -> None:
        """Every entry on `tensor`'s storage (an op wrote it)."""
        for table, key in self._by_storage.pop(_storage_ptr(tensor), []):
            table.pop(key, None)


class OpRecording:
    """The op records of a run's window steps; begin(step) before a step's ops, end() after."""

    def __init__(self, torch: Any, model: Any, optimizer: Any, window: Any,
                 keep_bytes: Any = DEFAULT_KEEP_BYTES,
                 cudnn: Any = None, digester: Any = None, keep_op: Any = None,
                 run_folder: Any = None, layers: Any = None) -> None:
        """`cudnn`: the cudnn_log.CudnnLedger of a GPU run (None: no cuDNN, as on the CPU);
        `digester`: where tensors are digested (device_digest.py; default: the environment's);
        `keep_op`: (step, index) of the op kept whole for a magnitude and a replay (kept_op.py),
        its kept-op.pt written into `run_folder`; `layers`: module paths renamed in the records'
        `layer` (op_places.py)."""
        self.keep_op = keep_op
        self._run_folder = run_folder
        self._captured = None  # the kept op's call, captured before it ran
        self.kept_op_path = None
        self.kept_op_sha256 = None  # of the bytes written: the replay loads no other file
        # why the op was not kept (an argument only a pickle holds)
        self.kept_op_unstorable: Any = None
        self._torch = torch
        self._digester = digester or device_digest.Digester(torch)
        self._digests = self._digester.batch()  # the step's (begin() makes each step's own)
        self._writes: Any = {}  # op -> whether its schema writes an argument
        self.window = window
        self.cudnn = cudnn
        self.kept = KeptOutputs(keep_bytes)
        self.seconds = 0.0  # spent digesting and keeping (the recording's cost)
        self._places = OpPlaces(torch, model, optimizer, layers)
        self._pid = os.getpid()
        self._receiving = 0  # in a DataLoader's receipt of worker results: not recorded
        self._restore_loader = None
        self._mode: Any = None
        self._step = None
        self._records: Any = []
        self._cache = _DigestCache()

    def _receipts_unrecorded(self) -> Any:
        """A DataLoader with workers rebuilds each batch from shared memory when it arrives, and
        batches arrive in whatever order the workers finish: how many a step receives is timing,
        not computation, and would shift every later record of the step between runs. Those ops
        are not recorded (the batch itself is: rec.step's digests, and every op that reads it)."""
        from torch.utils.data import dataloader
        cls = dataloader._MultiProcessingDataLoaderIter
        original: Any = cls.__dict__.get("_try_get_data")
        if original is None:
            return None

        def receiving(iterator: Any, *args: Any, **kwargs: Any) -> Any:
            self._receiving += 1
            try:
                return original(iterator, *args, **kwargs)
            finally:
                self._receiving -= 1
        setattr(cls, "_try_get_data", receiving)
        return lambda: setattr(cls, "_try_get_data", original)

    def begin(self, step: Any) -> None:
        """Starts recording step `step`'s ops when the window holds it (and catching cuDNN's API
        messages, which only the window's steps need: cudnn_log.CudnnCapture)."""
        if not in_window(self.window, step):
            return
        self._step, self._records, self._cache = step, [], _DigestCache()
        self._digests = self._digester.batch()
        self._restore_loader = self._receipts_unrecorded()
        self._places.start()
        if self.cudnn is not None:
            self.cudnn.log.start()  # (again at the first convolution when cuDNN loads later)
        self._mode = _make_mode(self._torch, self)
        self._mode.__enter__()

    def end(self) -> Any:
        """Stops recording; the records of the step begun, or None when it was not recorded."""
        if self._mode is None:
            return None
        self._mode.__exit__(None, None, None)
        self._mode = None
        self._places.stop()
        if self._restore_loader is not None:
            self._restore_loader()
        if self.cudnn is not None:
            self.cudnn.log.stop()
        started = time.perf_counter()
        self._digests.collect()  # the step's one wait for its digests
        self.kept.settle(self._torch)
        records, self._records = device_digest.resolved(self._records), []
        if self._captured is not None:
            index = self._captured["call"]["index"]
            self.kept_op_path, self.kept_op_sha256 = kept_op.save(
                self._torch, self._captured, records[index]["out"], self._run_folder)
            self._captured = None
        self.seconds += time.perf_counter() - started
        return records

    # --- one call ---

    def _input_digest(self, tensor: Any) -> Any:
        digest = self._cache.get(tensor)
        if digest is None:
            digest = op_digests.flat_digest(self._torch, tensor, self._digests)
            self._cache.put(tensor, digest)
        return digest

    def _generator_digest(self, func: Any, args: Any, kwargs: Any, inputs: Any) -> Any:
        torch = self._torch
        generator = kwargs.get("generator")
        for i, a in enumerate(func._schema.arguments):
            if a.name == "generator" and i < len(args):
                generator = args[i]
        if isinstance(generator, torch.Generator):
            state = generator.get_state()
        else:
            device = kwargs.get("device") or (inputs[0].device if inputs else None)
            device = torch.device(device) if device is not None else torch.device("cpu")
            state = (torch.cuda.get_rng_state(device) if device.type == "cuda"
                     else torch.get_rng_state())
        return op_digests.flat_digest(torch, state)

    def call(self, func: Any, args: Any, kwargs: Any) -> Any:
        """Runs one aten call and records it (not in a process forked from the run's: a
        DataLoader worker inherits the mode, but its records would go nowhere)."""
        if os.getpid() != self._pid or self._receiving:
            return func(*args, **kwargs)
        torch = self._torch
        started = time.perf_counter()
        base = _base_name(func)
        tensors = [t for t in _leaves((args, kwargs), []) if isinstance(t, torch.Tensor)]
        record = {"op": str(func), "layer": self._places.current(), "in": [], "in_types": []}
        for t in tensors:
            record["in"].append(self._input_digest(t))
            record["in_types"].append(op_digests.type_text(t))
        arguments = op_digests.arguments_digest(torch, args, kwargs)
        if arguments is not None:
            record["in"].append(arguments)
            record["in_types"].append("args")
        if base in RANDOM or any(a.name == "generator" for a in func._schema.arguments):
            record["in"].append(self._generator_digest(func, args, kwargs, tensors))
            record["in_types"].append("generator")
        reads_log = self.cudnn is not None and base in CONVOLUTIONS and self.cudnn.log.start()
        log_before = self.cudnn.log.offset() if reads_log else 0
        if self._writes_arguments(func):
            self._digests.launch()  # the GPU reads what is queued before the op writes it
        kept_whole = self.keep_op == (self._step, len(self._records))
        if kept_whole and self._run_folder is not None:
            try:
                self._captured = kept_op.capture(torch, func, args, kwargs, self._step,
                                                 len(self._records))
            except kept_op.Unstorable as e:  # the run goes on; its trace says why
                self.kept_op_unstorable = "%s takes %s" % (func, e)
        ran = time.perf_counter()
        out = func(*args, **kwargs)
        done = time.perf_counter()
        if reads_log:
            self.cudnn.name(record, func, args,
                            self.cudnn.log.executes_between(log_before, self.cudnn.log.offset()))
        self._forget_written(func, args, kwargs)
        record["out"], record["out_types"] = [], []
        keeping = kept_whole or (base in ORDER_DEPENDENT and not self.kept.full)
        kept = []  # (dtype name, bytes) of each tensor output, when keeping
        for value in _leaves(out, []):
            if isinstance(value, torch.Tensor):
                if base in UNINITIALIZED:
                    digest = op_digests.value_digest(torch, "uninitialized " +
                                                     op_digests.type_text(value))
                elif keeping:  # digest and kept bytes from one copy (on the device for a GPU)
                    digest, values = op_digests.flat_digest_and_bytes(torch, value,
                                                                      self._digests)
                    kept.append(values)
                else:  # a view of bytes digested already (detach, view, reshape) is not redone
                    digest = self._input_digest(value)
                self._cache.put(value, digest)
                record["out_types"].append(op_digests.type_text(value))
            elif value is not None:
                digest = op_digests.value_digest(torch, value)
                record["out_types"].append("value")
            else:
                continue
            record["out"].append(digest)
        if keeping and kept and len(kept) == len(record["out"]):
            self.kept.keep(self._step, len(self._records), kept, whatever_the_budget=kept_whole)
        self._records.append(record)
        self.seconds += (ran - started) + (time.perf_counter() - done)
        return out

    def _writes_arguments(self, func: Any) -> Any:
        writes = self._writes.get(func)
        if writes is None:
            writes = any(a.alias_info is not None and a.alias_info.is_write
                         for a in func._schema.arguments)
            self._writes[func] = writes
        return writes

    def _forget_written(self, func: Any, args: Any, kwargs: Any) -> None:
        torch = self._torch
        for i, a in enumerate(func._schema.arguments):
            if a.alias_info is None or not a.alias_info.is_write:
                continue
            value = args[i] if i < len(args) else kwargs.get(a.name)
            for t in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(t, torch.Tensor):
                    self._cache.forget_storage(t)


def _make_mode(torch: Any, recording: Any) -> Any:
    """A TorchDispatchMode that hands every aten call to `recording` (made here: the package
    imports without torch)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class _RecordingMode(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            if func.namespace == "profiler":  # bookkeeping of torch.profiler: no values
                return func(*args, **(kwargs or {}))
            return recording.call(func, args, kwargs or {})

    return _RecordingMode()
