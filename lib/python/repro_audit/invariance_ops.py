"""The ops of one probe of a batch-invariance sweep (invariance_sweep.py; docs/invariance.md, "The
PyTorch sweep"): a TorchDispatchMode that records every aten call of the model's forward pass in
execution order, with the module running it and the digest of the anchor's row of each tensor it
reads and of the first tensor it returns.

Which tensors are batched. A tensor is *batched* when it came from the probe's batch: the batch
itself, and every output of an op that read a batched tensor (tracked by identity, weakly). Every
other tensor (a weight, a buffer, a constant the forward pass made) is *whole*: its digest is the
whole tensor's, and cannot depend on the batch's other samples.

Where a batched tensor's anchor row is. The reference (the anchor alone, size 1) runs first and
keeps each batched tensor's shape; a probe of size S compares its tensor with the reference's at
the same op and argument. Where exactly one dimension d differs, S times the reference's:
- the reference's d has size 1: the row is `tensor.select(d, anchor_row)` (a row of the batch);
- else the batch was folded into d (a `view(B * T, F)`, as nn.Linear does to a 3-D input, or
  attention's `view(T, B * H, D)`), the batch outermost: the row is the anchor's chunk,
  `tensor.narrow(d, anchor_row * k, k)`, k the reference's size of d.
Where no dimension or more than one differs, the tensor has no row (an op reduced over the batch,
`x.sum(0)`, or mixed it): an input is digested whole, an output is null. Where the probe ran other
ops than the reference (the model's ops depend on the batch's size), a tensor's row is along
`batch_dim` if that dimension has size S, else along dimension 0 if it has, else it has none.

The reference cannot tell from its own shapes (every candidate has size 1): it keeps its batched
tensors (`Deferred`) and digests them once the sweep is done, along the dimension the probes
that ran the same ops found most often (invariance_sweep.py's vote), so that the reference's rows
are the probes' rows: `select(d, 0)` or the whole tensor (its chunk), the same shapes.

Under padding (a probe whose batch is padded to length L, the anchor's own length La < L; the
sweep's `Padding`) a batched tensor's shape may also differ from the reference's in its length:
each dimension that is La in the reference and L in the probe is cut back to the anchor's
positions, `narrow(d, 0, La)` (attention's scores [S, H, L, L] have two), and a dimension into
which the batch and the length were folded ([S * L, F] against [La, F]: nn.Linear on a padded
sequence) gives the anchor's chunk of L * m cut to its first La * m. Exactly one dimension must
read as the batch's and every other one that differs as a length (a dimension of S * La == L
reads both ways: the other dimensions decide); a tensor that reads no way or two has no row. So
a padded probe's rows have the reference's shapes, and an op whose anchor positions read the
reference's bits and wrote others is the op that made the sample depend on its padding. The
reference's vote counts a padded probe's decision by its batch dimension alone.

A row is digested with digest.tensor_digest (dtype, shape and bits), so the row of a batch of
one and the row of a batch of 64 are equal exactly when their bits are. Whole tensors on the
model's parameters' and buffers' storage (and views of them, a weight's transpose) are digested
once per version, not once per probe.
"""
from typing import Any, List
import weakref

from .digest import tensor_digest
from .op_records import ORDER_DEPENDENT, _leaves, _storage_ptr

WHOLE = "whole"  # a decision: the tensor is not batched
# How far ahead of the last op matched a probe's op is looked for among the reference's: the ops
# one batch size adds are a few (a copy of a non-contiguous input, a split of addmm into mm and
# add), and a wider window would match an op of the same name further on by chance.
ALIGN_WINDOW = 8


def by_size(shape: Any, size: Any, batch_dim: Any, pad: Any = None) -> Any:
    """The decision for a batched tensor of a probe whose ops are not the reference's: ("row", d)
    for `batch_dim` if it has `size`, else for dimension 0 if it has, else None. Under padding
    (`pad`: (La, L)) every other dimension of size L is cut to La."""
    d = None
    if len(shape) > batch_dim and shape[batch_dim] == size:
        d = batch_dim
    elif len(shape) > 0 and shape[0] == size:
        d = 0
    if d is None:
        return None
    if pad is None:
        return ("row", d)
    anchor_length, length = pad
    cuts = tuple((e, anchor_length) for e, n in enumerate(shape) if e != d and n == length)
    return ("row", d, None, cuts)


def by_reference(shape: Any, reference_shape: Any, size: Any, pad: Any = None) -> Any:
    """The decision for a batched tensor of `shape` in a probe of `size` > 1 whose reference
    tensor had `reference_shape` (the module's documentation): ("row", d), ("chunk", d) or None;
    under padding (`pad`: (La, L), L > La) ("row" | "chunk", d, keep, cuts): `keep` the chunk's
    first elements that are the anchor's (None: all), `cuts` each length dimension and La."""
    if len(shape) != len(reference_shape):
        return None
    differ = [d for d, (mine, theirs) in enumerate(zip(shape, reference_shape)) if mine != theirs]
    if pad is None:
        if len(differ) != 1 or shape[differ[0]] != size * reference_shape[differ[0]]:
            return None
        d = differ[0]
        return ("row", d) if reference_shape[d] == 1 else ("chunk", d)
    anchor_length, length = pad
    batches, cuts = [], set()  # each dimension's readings as the batch's, the ones cut
    for d in differ:
        mine, theirs = shape[d], reference_shape[d]
        if mine == size * theirs:  # the batch: a row (the reference had 1) or a folded chunk
            batches.append(("row", d, None) if theirs == 1 else ("chunk", d, None))
        if theirs % anchor_length == 0 and mine * anchor_length == size * theirs * length:
            batches.append(("chunk", d, theirs))  # the batch and the length folded together
        if theirs == anchor_length and mine == length:
            cuts.add(d)
    # One dimension is the batch's, every other one that differs a length: the readings that
    # leave exactly one such choice ([2, 10, F] against [1, 5, F]: 10 reads as 2 * 5 or as the
    # length 10, but dimension 0 can only be the batch).
    chosen = [b for b in batches if all(d in cuts for d in differ if d != b[1])]
    if len(chosen) != 1:
        return None
    batch = chosen[0]
    return batch + (tuple((d, anchor_length) for d in differ if d != batch[1]),)


def anchor_part(tensor: Any, decision: Any, row: Any, size: Any) -> Any:
    """The anchor's row of `tensor` (a decision that is not None) in a batch of `size` where the
    anchor is row `row`: a row, or its chunk of k = shape[d] / size (its first `keep` elements
    under padding), each length dimension of a padded probe cut to the anchor's length first."""
    kind, d = decision[0], decision[1]
    keep = decision[2] if len(decision) > 2 else None
    for dim, anchor_length in (decision[3] if len(decision) > 3 else ()):
        tensor = tensor.narrow(dim, 0, anchor_length)
    if kind == "row":
        return tensor.select(d, row)
    k = tensor.shape[d] // size
    return tensor.narrow(d, row * k, k if keep is None else keep)


def one_ulp_up(torch: Any, row: Any) -> Any:
    """`row` with every element moved by one ULP: toward +infinity, +infinity itself toward zero,
    NaN left as it is. By the bits (torch 1.13 has no nextafter for float16 or bfloat16): an
    IEEE float's bits as a signed integer grow with its magnitude; the sign bit makes it
    negative."""
    ints = {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int32,
            torch.float64: torch.int64}[row.dtype]
    bits = row.contiguous().view(ints)
    negative_zero = torch.iinfo(ints).min  # the sign bit alone
    stepped = torch.where(bits >= 0, bits + 1, bits - 1)
    stepped = torch.where(bits == negative_zero, torch.ones_like(bits), stepped)
    stepped = torch.where(torch.isposinf(row), bits - 1, stepped)
    stepped = torch.where(torch.isnan(row), bits, stepped)
    return stepped.view(row.dtype)


class Deferred:
    """A batched tensor of the reference probe, kept (a copy: a later in-place op may write it)
    until the sweep says where its row is."""

    __slots__ = ("tensor", "digests")

    def __init__(self, tensor: Any) -> None:
        self.tensor = tensor
        self.digests: Any = {}  # decision -> digest

    def digest(self, decision: Any) -> Any:
        """The digest of the row `decision` names (None: the whole tensor's; a chunk of a batch
        of one is the whole tensor)."""
        if decision not in self.digests:
            part = self.tensor
            if decision is not None and decision[0] == "row":
                part = self.tensor.select(decision[1], 0)
            self.digests[decision] = tensor_digest(part)
        return self.digests[decision]


class WholeDigests:
    """Whole digests of the tensors on the model's parameters' and buffers' storage, by their
    place and version counter (a view shares its base's), kept for the whole sweep: ResNet-18's
    11 M parameters are 45 MB to hash, in every probe otherwise."""

    def __init__(self, model: Any) -> None:
        self._storages = {_storage_ptr(t) for t in list(model.parameters()) +
                          list(model.buffers())}
        self._storages.discard(None)
        self._digests: Any = {}

    def get(self, tensor: Any) -> Any:
        place = _storage_ptr(tensor)
        if place is None or place not in self._storages:
            return tensor_digest(tensor)
        try:
            version = tensor._version
        except RuntimeError:  # an inference tensor has no version counter
            return tensor_digest(tensor)
        key = (place, tensor.data_ptr(), tuple(tensor.shape), tuple(tensor.stride()),
               tensor.dtype)
        found = self._digests.get(key)
        if found is None or found[0] != version:
            found = (version, tensor_digest(tensor))
            self._digests[key] = found
        return found[1]


class ModuleStack:
    """The innermost module running, by forward pre- and post-hooks on every module while a probe
    runs: its name in model.named_modules() ("layer1.0.conv1"; "" for the model itself and for
    ops outside any module)."""

    def __init__(self, model: Any) -> None:
        self._modules = list(model.named_modules())
        self._running: Any = []
        self._handles: Any = []

    def current(self) -> Any:
        return self._running[-1] if self._running else ""

    def __enter__(self) -> Any:
        self._running = []
        for name, module in self._modules:
            self._handles.append(module.register_forward_pre_hook(self._enter(name)))
            self._handles.append(module.register_forward_hook(self._leave(name)))
        return self

    def __exit__(self, *exc: Any) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _enter(self, name: Any) -> Any:
        def hook(module: Any, inputs: Any) -> None:
            self._running.append(name)
        return hook

    def _leave(self, name: Any) -> Any:
        def hook(module: Any, inputs: Any, output: Any) -> None:
            if self._running and self._running[-1] == name:
                self._running.pop()
        return hook


class ProbeOps:
    """The op records of one probe: `ops`, each (op, module, inputs, output), each input and the
    output (digest, whole), or a Deferred in the reference, the output None where there is no row;
    `decisions`, per op the decision (WHOLE, None, ("row", d) or ("chunk", d), under padding
    with the chunk's part and the length cuts after them: by_reference) of each input and
    of the output; `shapes`, per op the shape of each batched tensor (None for a whole one);
    `aligned`, per op the index of the reference's op it is (None: none). `reference`: the
    reference's ProbeOps (None: this is the reference). `control`: the index of the op whose
    output's anchor row is moved by one ULP (the control probe), else None. `pad`: (La, L) where
    the probe's batch is padded to L beyond the anchor's length La, else None."""

    def __init__(self, torch: Any, modules: Any, wholes: Any, size: Any, row: Any, batch_dim: Any,
                 reference: Any = None,
                 control: Any = None, pad: Any = None) -> None:
        self._torch = torch
        self._modules = modules
        self._wholes = wholes
        self.size, self.row, self.batch_dim = size, row, batch_dim
        self.reference = reference
        self.control = control
        self.pad = pad
        self.control_applied = False
        self.ops: List[Any] = []
        self.decisions: List[Any] = []
        self.shapes: List[Any] = []
        self.aligned: List[Any] = []
        self.floating: Any = []  # per op: whether its first tensor output is floating
        self._cursor = 0  # the reference's next op to align with
        self._batched: Any = {}  # id -> weakref of each batched tensor alive
        self._rows: Any = {}  # id -> (weakref, version, decision, held) of batched tensors digested

    def mark_batched(self, tensor: Any) -> None:
        self._batched[id(tensor)] = weakref.ref(tensor)

    def _is_batched(self, tensor: Any) -> Any:
        ref = self._batched.get(id(tensor))
        return ref is not None and ref() is tensor

    def _align(self, name: Any, inputs: Any) -> Any:
        """The index of the reference's op this call is (None: none): the next reference op of
        the same name and number of tensor inputs within ALIGN_WINDOW ops of the last one
        matched. The lists differ where the ops depend on the batch's size (nn.Linear on a
        permuted input: addmm for one sample; a copy, mm and add for more), and agree after."""
        if self.reference is None:
            return None
        ops = self.reference.ops
        for i in range(self._cursor, min(len(ops), self._cursor + ALIGN_WINDOW)):
            if ops[i][0] == name and len(ops[i][2]) == inputs:
                self._cursor = i + 1
                return i
        return None

    def _decision(self, aligned: Any, slot: Any, tensor: Any) -> Any:
        """Where a batched tensor's anchor row is (the module's documentation)."""
        if self.reference is None:
            return None  # the reference decides after the sweep (Deferred)
        if aligned is not None and slot < len(self.reference.shapes[aligned]):
            reference_shape = self.reference.shapes[aligned][slot]
            if reference_shape is not None:
                return by_reference(tuple(tensor.shape), reference_shape, self.size, self.pad)
        return by_size(tuple(tensor.shape), self.size, self.batch_dim, self.pad)

    def _entry(self, aligned: Any, slot: Any, tensor: Any, batched: Any, output: Any) -> Any:
        """(decision, what the record holds) of one tensor the op read or wrote."""
        if not batched:
            return WHOLE, (self._wholes.get(tensor), True)
        decision = self._decision(aligned, slot, tensor)
        if self.reference is not None and decision is None and output:
            return None, None  # reduced over the batch: no row is the anchor's
        version = tensor._version
        seen = self._rows.get(id(tensor))
        if seen is not None and seen[0]() is tensor and seen[1:3] == (version, decision):
            return decision, seen[3]
        if self.reference is None:
            held: Any = Deferred(tensor.detach().clone())
        elif decision is None:
            held = (tensor_digest(tensor), True)
        else:
            held = (tensor_digest(anchor_part(tensor, decision, self.row, self.size)), False)
        self._rows[id(tensor)] = (weakref.ref(tensor), version, decision, held)
        return decision, held

    def call(self, func: Any, args: Any, kwargs: Any) -> Any:
        torch, name = self._torch, str(func)
        tensors = [t for t in _leaves((args, kwargs), []) if isinstance(t, torch.Tensor)]
        batched = [self._is_batched(t) for t in tensors]
        aligned = self._align(name, len(tensors))
        inputs = [self._entry(aligned, j, t, b, False)
                  for j, (t, b) in enumerate(zip(tensors, batched))]
        out = func(*args, **kwargs)
        outputs = [t for t in _leaves(out, []) if isinstance(t, torch.Tensor)]
        if any(batched):
            for t in outputs:
                self.mark_batched(t)
        shapes = [tuple(t.shape) if b else None for t, b in zip(tensors, batched)]
        decisions = [d for d, _ in inputs]
        output = None
        if outputs:
            first = outputs[0]
            if self.control == len(self.ops):
                self._move_one_ulp(aligned, len(tensors), first, any(batched))
            decision, output = self._entry(aligned, len(tensors), first, any(batched), True)
            decisions.append(decision)
            shapes.append(tuple(first.shape) if any(batched) else None)
        self.ops.append((name, self._modules.current(), [held for _, held in inputs], output))
        self.decisions.append(tuple(decisions))
        self.shapes.append(tuple(shapes))
        self.aligned.append(aligned)
        self.floating.append(bool(outputs) and outputs[0].is_floating_point())
        return out

    def _move_one_ulp(self, aligned: Any, slot: Any, tensor: Any, batched: Any) -> None:
        decision = self._decision(aligned, slot, tensor) if batched else None
        if decision is None or not tensor.is_floating_point():
            return  # the sweep chose this op for a floating row it had in the probe repeated
        part = anchor_part(tensor, decision, self.row, self.size)
        part.copy_(one_ulp_up(self._torch, part))
        self.control_applied = True


def order_dependent(op_name: Any) -> Any:
    """Whether an op ("aten.addmm.default") sums in an order a kernel chooses (op_records.py's
    list)."""
    packet = op_name.split(".")[1] if op_name.count(".") >= 2 else op_name
    base = packet[:-1] if packet.endswith("_") and not packet.endswith("__") else packet
    return base in ORDER_DEPENDENT


def make_mode(torch: Any, probe: Any) -> Any:
    """A TorchDispatchMode handing every aten call to `probe` (ProbeOps)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class _ProbeMode(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            if func.namespace == "profiler":  # torch.profiler's bookkeeping: no values
                return func(*args, **(kwargs or {}))
            return probe.call(func, args, kwargs or {})

    return _ProbeMode()

