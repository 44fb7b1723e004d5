"""A batch-invariance sweep of a PyTorch model (docs/invariance.md, "The PyTorch sweep"; the file
in docs/trace-format.md, "Invariance sweeps").

    result = repro_audit.invariance(model, batch, anchor=0)
    assert not result.differing, result.differing

Does the model give sample `anchor` of `batch` the same output bits whatever else is in its
batch? The sweep runs the model's forward pass (eval mode, torch.no_grad()) on the anchor alone
(the reference), then on batches of other sizes holding the anchor at row 0 ("first"), S // 2
("middle") and S - 1 ("last"), the other rows filled with the batch's other samples in order,
cycling, the anchor skipped ("batch"), or with seeded normal noise of the batch's mean and
standard deviation ("noise": torch.Generator seeded with NOISE_SEED for each probe, so a probe's
noise depends on its size only). Each probe records its output's anchor row and, op by op (every
aten call, under a TorchDispatchMode), the digests of the anchor's row of what the op read and
wrote (invariance_ops.py: which tensors have a row, and how the reference's rows are found).

The plan: `sizes` (default: default_sizes(), 1..16 and each power of two with its neighbours,
2^k - 1, 2^k, 2^k + 1, up to 64, the rule of C++'s default_invariance_sizes), `positions`
(default all three), `neighbours` (default "batch") and `control` (default True: one more probe,
the first probe's configuration, in which one op's output row is moved by one ULP, so that a
reader can check that the sweep sees a change where there is one). Under `repro-audit exec
--invariance` the environment's REPRO_AUDIT_INVARIANCE (JSON: {"out": FILE, "sizes": [...],
"positions": [...], "neighbours": [...], "control": true}) sets the plan: its `out` and `control`
win over the arguments; its sizes, positions and neighbours are merged with the arguments' (the
union: a script that names sizes of its own gets them swept too, and so does the audit's plan).
Without the variable and without `out=`, the sweep runs and its result is returned, nothing is
written. The file is written whole or not at all (trace.write_whole): bad input fails before the
first forward pass, and an exception during the sweep leaves no file.

Padding (`padding=Padding(dim=...)`): a sequence model's batch pads its samples to the batch's
longest, and a sample's output must not depend on how much padding its neighbours forced on it.
Every probe then also runs padded to each of `Padding.lengths` (default: the anchor's length
La + 1, 2 * La, and the longer lengths of a batch given as a list of samples): the anchor padded
with `value` from La to L, each neighbour padded or cut to L, the model given the mask or the
lengths as the Padding says; its neighbours are named "batch+pad:L". The anchor's output row is
compared over the anchor's own positions (each output dimension that is La alone and L padded cut
back to La; an output without the length is compared whole), and so is each op's row
(invariance_ops.py), so the first op whose unpadded part parts is named.
"""
from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass, field, replace
from typing import (TYPE_CHECKING, Any, Callable, List, Mapping, Optional, Sequence, Tuple,
                    Union)

if TYPE_CHECKING:  # the package imports without torch
    import torch

from . import settings
from .digest import tensor_digest
from .invariance_ops import (WHOLE, Deferred, ModuleStack, ProbeOps, WholeDigests, by_size,
                             make_mode, order_dependent)
from .op_records import _leaves
from .trace import write_whole

ENVIRONMENT = settings.INVARIANCE
POSITIONS = ("first", "middle", "last")
NEIGHBOURS = ("batch", "noise")
DEFAULT_MAX_SIZE = 64
NOISE_SEED = 0x5EED  # each "noise" probe's generator: the same noise for every probe of a size
FORMAT_VERSION = 1
KIND = "repro-audit invariance sweep"
_PLAN_KEYS = ("out", "sizes", "positions", "neighbours", "control")


def default_sizes(max_size: int = DEFAULT_MAX_SIZE) -> List[int]:
    """1..16, then each power of two and its neighbours (2^k - 1, 2^k, 2^k + 1), where kernels
    switch their blocking, up to `max_size` (C++'s default_invariance_sizes)."""
    sizes = set(range(1, min(16, max_size) + 1))
    power = 16
    while power - 1 <= max_size:
        sizes.update(s for s in (power - 1, power, power + 1) if s <= max_size)
        power *= 2
    return sorted(sizes)


def anchor_row(position: str, size: int) -> int:
    """The anchor's row for `position` in a batch of `size`: first 0, middle size // 2, last
    size - 1."""
    return {"first": 0, "middle": size // 2, "last": size - 1}[position]


@dataclass(frozen=True)
class Padding:
    """How the model's batches pad samples of different lengths (docs/invariance.md, "Padding").

    `dim`: the length dimension of one sample, counted without the batch dimension (a sample of
    shape [T, F]: 0). `value`: what the padded positions hold (a pad token's id, 0.0). `lengths`:
    the lengths L to pad the anchor to, each longer than the anchor's own La (None: La + 1,
    2 * La and the longer lengths of a batch given as a list of samples). The model's call:
    `model(padded)` by default (the model finds the padding itself, or does not: that is what
    the sweep tells); `mask_arg="mask"`: `model(padded, mask=mask)`, `mask` a bool tensor
    [batch size, L], True at each sample's own positions; or `make_inputs(padded, lengths)`
    returning (args, kwargs) for `model(*args, **kwargs)`, `lengths` an int64 tensor of each
    sample's own length (for any other convention: True at the padding, an additive float mask,
    position ids). Samples are padded at the end (right)."""
    dim: int
    value: Union[int, float, bool] = 0
    lengths: Optional[Sequence[int]] = None
    mask_arg: Optional[str] = None
    make_inputs: Optional[Callable[["torch.Tensor", "torch.Tensor"],
                                   Tuple[Sequence[Any], Mapping[str, Any]]]] = None


@dataclass(frozen=True)
class ProbeConfig:
    batch_size: int
    anchor_row: int
    position: str
    neighbours: str  # "" for the reference; "batch+pad:L" for a batch padded to L
    control: bool = False
    padded_length: Optional[int] = None  # L, where the anchor is padded beyond its own length


@dataclass(frozen=True)
class RowDigest:
    digest: str  # 32 hex digits (digest.py)
    whole: bool  # the whole tensor's digest: it has no batch dimension


@dataclass(frozen=True)
class OpRecord:
    op: str  # "aten.addmm.default"
    module: str  # "fc1"; "" for the model itself or outside any module
    inputs: Tuple[RowDigest, ...]
    output: Optional[RowDigest]  # None: the op reduced over the batch (or returned no tensor)


@dataclass
class Probe:
    config: ProbeConfig
    output_digest: str  # the anchor's output row (as float32 where it is float16 or bfloat16)
    output_values: Optional[bytes]  # its float32 values, little-endian (None: not float)
    ops: List[OpRecord]


@dataclass(frozen=True)
class ControlOp:
    op_index: int  # into the reference's ops
    op: str
    module: str


@dataclass
class InvarianceResult:
    """What a sweep found. `differing`: the configurations (the control probe left out) whose
    anchor output differs from the reference's; `control_seen`: whether the control probe's
    record of the control op's output differs from that of the probe it repeats (None: no
    control ran)."""
    path: Optional[str]
    probe_count: int  # the probes after the reference, the control's included
    differing: List[ProbeConfig]
    reference: Probe
    probes: List[Probe] = field(repr=False)
    control: Optional[ControlOp] = None
    control_seen: Optional[bool] = None

    @property
    def invariant(self) -> bool:
        return not self.differing

    def first_difference(self, probe: Probe) -> Optional[int]:
        """The index of the first op of `probe` that is not the reference's op at the same index
        or whose output row differs from it (None: every op agrees)."""
        for i, (mine, theirs) in enumerate(zip(probe.ops, self.reference.ops)):
            if mine.op != theirs.op or mine.output != theirs.output:
                return i
        if len(probe.ops) != len(self.reference.ops):
            return min(len(probe.ops), len(self.reference.ops))
        return None


@dataclass(frozen=True)
class Plan:
    sizes: Tuple[int, ...]
    positions: Tuple[str, ...]
    neighbours: Tuple[str, ...]
    control: bool
    out: Optional[str]


def _checked_names(values: Any, allowed: Any, what: Any) -> Any:
    if isinstance(values, str) or not isinstance(values, (list, tuple)):
        raise TypeError(f"repro_audit.invariance: {what} must be a list of names, got {values!r}")
    for v in values:
        if v not in allowed:
            raise ValueError(f"repro_audit.invariance: {what}: {v!r} is not one of "
                             f"{', '.join(allowed)}")
    if not values:
        raise ValueError(f"repro_audit.invariance: {what} is empty")
    return list(values)


def _checked_sizes(values: Any, what: Any) -> Any:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"repro_audit.invariance: {what} must be a list of batch sizes, got "
                        f"{values!r}")
    values = list(values)
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"repro_audit.invariance: {what}: {v!r} is not a whole number")
        if v < 1:
            raise ValueError(f"repro_audit.invariance: {what}: a batch size of {v}: sizes are "
                             "1 or more (1 is the anchor alone, the reference)")
    return values


def _environment_plan(text: Any) -> Any:
    try:
        plan = json.loads(text)
    except ValueError as e:
        raise ValueError(f"repro_audit.invariance: {ENVIRONMENT} is not JSON ({e})") from None
    if not isinstance(plan, dict):
        raise ValueError(f"repro_audit.invariance: {ENVIRONMENT} is not a JSON object")
    unknown = sorted(set(plan) - set(_PLAN_KEYS))
    if unknown:
        raise ValueError(f"repro_audit.invariance: {ENVIRONMENT} has unknown keys "
                         f"{', '.join(unknown)} (known: {', '.join(_PLAN_KEYS)})")
    if "out" in plan and not (isinstance(plan["out"], str) and plan["out"]):
        raise ValueError(f"repro_audit.invariance: {ENVIRONMENT}: out must name a file")
    if "control" in plan and not isinstance(plan["control"], bool):
        raise ValueError(f"repro_audit.invariance: {ENVIRONMENT}: control must be true or false")
    return plan


def resolve_plan(sizes: Any = None, positions: Any = None, neighbours: Any = None,
                 control: Any = None,
                 out: Any = None) -> Plan:
    """The plan of a call (the module's documentation: the environment's out and control win,
    lists are merged), checked: ValueError or TypeError naming what is wrong."""
    text = settings.invariance_plan()
    env = _environment_plan(text) if text else {}
    merged_sizes = set()
    for source, values in (("sizes", sizes), (ENVIRONMENT + " sizes", env.get("sizes"))):
        if values is not None:
            merged_sizes.update(_checked_sizes(values, source))
    if sizes is None and "sizes" not in env:
        merged_sizes.update(default_sizes())
    lists = {}
    for key, argument, allowed, default in (("positions", positions, POSITIONS, POSITIONS),
                                            ("neighbours", neighbours, NEIGHBOURS, ("batch",))):
        names = []
        for source, values in ((key, argument), (ENVIRONMENT + " " + key, env.get(key))):
            if values is not None:
                names += _checked_names(values, allowed, source)
        if argument is None and key not in env:
            names = list(default)
        lists[key] = tuple(dict.fromkeys(names))  # in order, each once
    out = env.get("out", out)
    if "control" in env:
        control = env["control"]
    return Plan(sizes=tuple(sorted(merged_sizes | {1})), positions=lists["positions"],
                neighbours=lists["neighbours"], control=True if control is None else bool(control),
                out=None if out is None else os.fspath(out))


@dataclass(frozen=True)
class _Padded:
    """A checked Padding: the samples (each without the batch dimension), the length dimension
    of a sample, the anchor's length and the lengths to pad it to."""
    samples: Tuple["torch.Tensor", ...]
    dim: int
    value: Union[int, float, bool]
    anchor_length: int
    lengths: Tuple[int, ...]
    mask_arg: Optional[str]
    make_inputs: Optional[Callable[..., Any]]


def _whole_number(value: Any) -> Any:
    return not isinstance(value, bool) and isinstance(value, int)


def _check_padding(torch: Any, padding: Any, samples: Any, is_list: Any, anchor: Any) -> Any:
    """The _Padded of a call (`samples`: the batch's, each without the batch dimension; the
    anchor already checked), or ValueError / TypeError."""
    first = samples[0]
    if not _whole_number(padding.dim):
        raise TypeError(f"repro_audit.invariance: padding.dim must be an int, got {padding.dim!r}")
    if not -first.dim() <= padding.dim < first.dim():
        raise ValueError(f"repro_audit.invariance: padding.dim {padding.dim} is out of range for "
                         f"a sample of shape {list(first.shape)} (the length dimension of one "
                         "sample, counted without the batch dimension)")
    dim = padding.dim % first.dim()
    rest = [n for d, n in enumerate(first.shape) if d != dim]
    for i, sample in enumerate(samples):
        if (sample.dim() != first.dim() or sample.dtype != first.dtype
                or sample.device != first.device
                or [n for d, n in enumerate(sample.shape) if d != dim] != rest):
            raise ValueError(f"repro_audit.invariance: sample {i} ({list(sample.shape)}, "
                             f"{sample.dtype}) differs from sample 0 ({list(first.shape)}, "
                             f"{first.dtype}) in more than its length along padding.dim {dim}")
        if sample.shape[dim] < 1:
            raise ValueError(f"repro_audit.invariance: sample {i} has length 0 along "
                             f"padding.dim {dim}")
    if not isinstance(padding.value, (bool, int, float)):
        raise TypeError("repro_audit.invariance: padding.value must be a number, got "
                        f"{padding.value!r}")
    if not first.is_floating_point() and padding.value != int(padding.value):
        raise ValueError(f"repro_audit.invariance: padding.value {padding.value!r} is not a "
                         f"{first.dtype} (a pad token's id, a whole number)")
    if padding.mask_arg is not None and padding.make_inputs is not None:
        raise ValueError("repro_audit.invariance: padding names both mask_arg and make_inputs: "
                         "give the model its mask one way")
    if padding.mask_arg is not None and not (isinstance(padding.mask_arg, str)
                                             and padding.mask_arg.isidentifier()):
        raise TypeError("repro_audit.invariance: padding.mask_arg must name a keyword argument, "
                        f"got {padding.mask_arg!r}")
    if padding.make_inputs is not None and not callable(padding.make_inputs):
        raise TypeError("repro_audit.invariance: padding.make_inputs must be callable: (padded "
                        "batch, lengths) -> (args, kwargs)")
    anchor_length = samples[anchor].shape[dim]
    if padding.lengths is None:
        lengths = {anchor_length + 1, 2 * anchor_length}
        if is_list:
            lengths.update(s.shape[dim] for s in samples if s.shape[dim] > anchor_length)
    else:
        lengths = _checked_sizes(padding.lengths, "padding.lengths")
        if not lengths:
            raise ValueError("repro_audit.invariance: padding.lengths is empty")
        for length in lengths:
            if length <= anchor_length:
                raise ValueError(f"repro_audit.invariance: padding.lengths: {length} is not "
                                 f"longer than the anchor's length {anchor_length} (along "
                                 f"padding.dim {dim}): a padded probe pads the anchor beyond its "
                                 "own length (its own length is the unpadded probes')")
    return _Padded(tuple(samples), dim, padding.value, anchor_length,
                   tuple(sorted(set(lengths))), padding.mask_arg, padding.make_inputs)


def _check_inputs(torch: Any, model: Any, batch: Any, anchor: Any, batch_dim: Any, plan: Any,
                  padding: Any = None) -> Any:
    """(batch_dim, batch size, _Padded or None) normalised, or ValueError / TypeError before
    anything runs."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError("repro_audit.invariance: model must be a torch.nn.Module, got "
                        f"{type(model).__name__}")
    if padding is not None and not isinstance(padding, Padding):
        raise TypeError("repro_audit.invariance: padding must be a repro_audit.Padding, got "
                        f"{type(padding).__name__}")
    is_list = padding is not None and isinstance(batch, (list, tuple))
    if is_list:
        for i, sample in enumerate(batch):
            if not isinstance(sample, torch.Tensor):
                raise TypeError(f"repro_audit.invariance: batch[{i}] is a "
                                f"{type(sample).__name__}: a list batch holds one tensor a "
                                "sample, without the batch dimension")
        if not batch or batch[0].dim() == 0:
            raise ValueError("repro_audit.invariance: a list batch needs samples with a length "
                             "dimension")
    elif not isinstance(batch, torch.Tensor):
        raise TypeError("repro_audit.invariance: batch must be a tensor with the samples along "
                        f"batch_dim{' (with padding: or a list of samples)' if padding else ''}"
                        f", got {type(batch).__name__}")
    if isinstance(batch_dim, bool) or not isinstance(batch_dim, int):
        raise TypeError(f"repro_audit.invariance: batch_dim must be an int, got {batch_dim!r}")
    shape = [len(batch)] + list(batch[0].shape) if is_list else list(batch.shape)
    if not -len(shape) <= batch_dim < len(shape):
        raise ValueError(f"repro_audit.invariance: batch_dim {batch_dim} is out of range for a "
                         f"batch of shape {shape}")
    batch_dim %= len(shape)
    count = len(batch) if is_list else batch.shape[batch_dim]
    if isinstance(anchor, bool) or not isinstance(anchor, int):
        raise TypeError(f"repro_audit.invariance: anchor must be an int, got {anchor!r}")
    if not 0 <= anchor < count:
        raise ValueError(f"repro_audit.invariance: anchor {anchor} is out of range: the batch "
                         f"holds {count} samples along dimension {batch_dim}")
    padded = None
    if padding is not None:
        samples = list(batch) if is_list else list(batch.unbind(batch_dim))
        padded = _check_padding(torch, padding, samples, is_list, anchor)
    first = padded.samples[0] if padded is not None else batch
    if "batch" in plan.neighbours and count < 2 and max(plan.sizes) > 1:
        raise ValueError("repro_audit.invariance: neighbours 'batch' fills the other rows with "
                         "the batch's other samples, and this batch holds the anchor alone: "
                         "pass more samples, or neighbours=('noise',)")
    if "noise" in plan.neighbours and not first.is_floating_point():
        raise ValueError(f"repro_audit.invariance: neighbours 'noise' needs a floating batch, "
                         f"this one is {first.dtype}: use neighbours=('batch',)")
    training_norms = [name or type(model).__name__ for name, m in model.named_modules()
                      if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.training]
    if training_norms:
        raise ValueError("repro_audit.invariance: the model is in train mode with BatchNorm "
                         f"({', '.join(training_norms[:3])}), which normalises each sample by "
                         "the batch's statistics: batch-dependent by definition. Call "
                         "model.eval() before the sweep (it then uses the running statistics)")
    if plan.out is not None:
        folder = os.path.dirname(os.path.abspath(plan.out))
        if not os.path.isdir(folder):
            raise FileNotFoundError(f"repro_audit.invariance: no folder {folder} for {plan.out}")
    return batch_dim, count, padded


def _way(config: Any) -> Any:
    """What fills the probe's other rows: "batch" or "noise" ("batch+pad:12": "batch")."""
    return config.neighbours.split("+", 1)[0]


def _noise(torch: Any, shape: Any, count: Any, noise_stats: Any, like: Any) -> Any:
    """`count` samples of `shape` of the batch's mean and standard deviation (NOISE_SEED)."""
    mean, std = noise_stats
    generator = torch.Generator().manual_seed(NOISE_SEED)
    noise = torch.randn((count,) + tuple(shape), generator=generator,
                        dtype=torch.float64) * std + mean
    return noise.to(device=like.device, dtype=like.dtype)


def _padded_probe_batch(torch: Any, padded: Any, batch_dim: Any, anchor: Any, config: Any,
                        others: Any, noise_stats: Any) -> Any:
    """(probe input, each sample's own length) under padding: the samples in the order
    _probe_batch's, each padded with the pad value or cut to the probe's length L (the anchor's
    own where the probe is not padded), stacked along batch_dim."""
    size, row, dim = config.batch_size, config.anchor_row, padded.dim
    length = config.padded_length or padded.anchor_length
    sample = padded.samples[anchor]
    if _way(config) == "noise":
        shape = list(sample.shape)
        shape[dim] = length  # a neighbour of noise is as long as the batch
        fill = list(_noise(torch, shape, size - 1, noise_stats, sample).unbind(0))
    else:
        fill = [padded.samples[others[k % len(others)]] for k in range(size - 1)]
    rows, lengths = [], []
    for part in fill[:row] + [sample] + fill[row:]:
        own = part.shape[dim]
        if own >= length:
            part = part.narrow(dim, 0, length)
        else:
            shape = list(part.shape)
            shape[dim] = length - own
            part = torch.cat([part, part.new_full(shape, padded.value)], dim)
        rows.append(part)
        lengths.append(min(own, length))
    return (torch.stack(rows, batch_dim),
            torch.tensor(lengths, dtype=torch.int64, device=sample.device))


def _model_inputs(torch: Any, padded: Any, probe_input: Any, lengths: Any, length: Any) -> Any:
    """(args, kwargs) of the model's call: the probe's input alone, or with its mask ([S, L],
    L = `length`), or what the Padding's make_inputs made of the input and the lengths."""
    if padded is None or (padded.mask_arg is None and padded.make_inputs is None):
        return (probe_input,), {}
    if padded.mask_arg is not None:
        positions = torch.arange(length, device=lengths.device)
        return (probe_input,), {padded.mask_arg: positions.unsqueeze(0) < lengths.unsqueeze(1)}
    made = padded.make_inputs(probe_input, lengths)
    if not (isinstance(made, (tuple, list)) and len(made) == 2
            and isinstance(made[0], (tuple, list)) and isinstance(made[1], Mapping)):
        raise TypeError("repro_audit.invariance: padding.make_inputs must return (args, kwargs), "
                        f"a tuple and a dict, got {type(made).__name__}")
    return tuple(made[0]), dict(made[1])


def _probe_batch(torch: Any, batch: Any, batch_dim: Any, anchor: Any, config: Any, others: Any,
                 noise_stats: Any) -> Any:
    """The probe's input: the anchor at its row, the other rows filled as `config` says."""
    size, row = config.batch_size, config.anchor_row
    if config.neighbours != "noise":
        fill = [others[k % len(others)] for k in range(size - 1)] if size > 1 else []
        order = fill[:row] + [anchor] + fill[row:]
        return batch.index_select(batch_dim, torch.tensor(order, device=batch.device))
    sample = batch.select(batch_dim, anchor)
    noise = _noise(torch, sample.shape, size - 1, noise_stats, batch)
    rows = torch.cat([noise[:row], sample.unsqueeze(0), noise[row:]])
    return rows.movedim(0, batch_dim).contiguous()


def _unpadded(row: Any, reference_shape: Any, anchor_length: Any, length: Any) -> Any:
    """The anchor's own positions of its output row in a batch padded to `length`: each
    dimension that is the anchor's length in the reference's row and `length` here cut back to
    the anchor's length; ValueError where the row's shape changed otherwise."""
    shape = tuple(row.shape)
    changed = [d for d, (mine, theirs) in enumerate(zip(shape, reference_shape))
               if mine != theirs]
    if len(shape) != len(reference_shape) or any(
            (shape[d], reference_shape[d]) != (length, anchor_length) for d in changed):
        raise ValueError(f"repro_audit.invariance: padded to length {length}, the model's output "
                         f"row of the anchor has shape {list(shape)}, and alone (length "
                         f"{anchor_length}) {list(reference_shape)}: only a dimension that is "
                         f"the length ({anchor_length} alone, {length} padded) may change, so "
                         "that the anchor's own positions are found in it. Return one output a "
                         "sample (pooled) or one with the length as a dimension of its own")
    for d in changed:
        row = row.narrow(d, 0, anchor_length)
    return row


def _output_row(torch: Any, out: Any, config: Any, batch_dim: Any, unpad: Any = None) -> Any:
    """(digest, float32 bytes or None) of the anchor's row of the model's output; TypeError or
    ValueError where the output is not one tensor with the batch's size along batch_dim.
    `unpad`: (the reference's row shape, La, L) for a padded probe (_unpadded)."""
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"repro_audit.invariance: the model returned a {type(out).__name__}, "
                        "not one tensor: wrap it in a module whose forward returns the tensor "
                        "to audit (e.g. the logits)")
    if out.dim() <= batch_dim or out.shape[batch_dim] != config.batch_size:
        raise ValueError(f"repro_audit.invariance: for a batch of {config.batch_size} the model "
                         f"returned shape {list(out.shape)}: its dimension {batch_dim} must hold "
                         "one row per sample (the same batch_dim as the input)")
    row = out.select(batch_dim, config.anchor_row)
    if unpad is not None:
        row = _unpadded(row, *unpad)
    if row.dtype in (torch.float16, torch.bfloat16):
        row = row.float()  # exact: every float16 and bfloat16 value is a float32 value
    values = None
    if row.dtype == torch.float32:
        values = row.detach().to("cpu").contiguous().numpy().astype("<f4").tobytes()
    return tensor_digest(row), values


def _run_probe(torch: Any, model: Any, modules: Any, wholes: Any, batch: Any, batch_dim: Any,
               anchor: Any, config: Any, others: Any,
               noise_stats: Any, reference: Any = None, control: Any = None, padded: Any = None,
               reference_row: Any = None) -> Any:
    """(ProbeOps, model output, output digest, values) of one probe; `reference`: the
    reference's ProbeOps (None: this is the reference); `padded`: the _Padded of a sweep under
    padding, `reference_row` the shape of the reference's output row."""
    pad = unpad = None
    if padded is None:
        probe_input = _probe_batch(torch, batch, batch_dim, anchor, config, others, noise_stats)
        args, kwargs = (probe_input,), {}
    else:
        probe_input, lengths = _padded_probe_batch(torch, padded, batch_dim, anchor, config,
                                                   others, noise_stats)
        length = config.padded_length or padded.anchor_length
        args, kwargs = _model_inputs(torch, padded, probe_input, lengths, length)
        if config.padded_length is not None:
            pad = (padded.anchor_length, config.padded_length)
            unpad = (reference_row,) + pad
    probe = ProbeOps(torch, modules, wholes, config.batch_size, config.anchor_row, batch_dim,
                     reference, control, pad)
    probe.mark_batched(probe_input)
    for t in _leaves((args, kwargs), []):  # the mask, the lengths: rows of the batch too
        if isinstance(t, torch.Tensor):
            probe.mark_batched(t)
    with modules, make_mode(torch, probe):
        out = model(*args, **kwargs)
    digest, values = _output_row(torch, out, config, batch_dim, unpad)
    return probe, out, digest, values


def _configs(plan: Any, lengths: Any = ()) -> Any:
    """Every probe after the reference, in the order run (the control's not among them); each
    neighbours way followed by the same batch padded to each of `lengths`."""
    configs = []
    for size in plan.sizes:
        if size == 1:
            continue
        rows: Any = {}
        for position in plan.positions:
            rows.setdefault(anchor_row(position, size), position)  # a small batch: rows shared
        for row, position in rows.items():
            for way in plan.neighbours:
                configs.append(ProbeConfig(size, row, position, way))
                configs.extend(ProbeConfig(size, row, position, f"{way}+pad:{length}",
                                           padded_length=length) for length in lengths)
    return configs


def _largest_first(probe: Any) -> int:
    return -int(probe.size)


def _vote(reference: Any, probes: Any) -> Any:
    """The reference's decisions (invariance_ops.py): for each batched tensor of each op, where
    most probes found the anchor's row at the op aligned with it (ties: the largest size's)."""
    votes: Any = {}
    for probe in sorted(probes, key=_largest_first):
        for aligned, decided in zip(probe.aligned, probe.decisions):
            if aligned is None or len(decided) != len(reference.decisions[aligned]):
                continue
            for j, d in enumerate(decided):
                if isinstance(d, tuple):
                    d = d[:2]  # a padded probe's cuts: its row's place is the batch's dimension
                counts = votes.setdefault((aligned, j), {})
                counts[d] = counts.get(d, 0) + 1  # dicts keep the first seen first: ties
    return {key: max(counts, key=counts.get) for key, counts in votes.items()}


def _resolved(held: Any, decision: Any, batch_dim: Any, output: Any) -> Any:
    """A reference entry as a RowDigest (None: no row)."""
    if not isinstance(held, Deferred):
        return None if held is None else RowDigest(*held)
    shape = held.tensor.shape
    usable = decision is None or (decision != WHOLE and decision[1] < len(shape) and
                                  (decision[0] == "chunk" or shape[decision[1]] == 1))
    if not usable:  # no probe ran the same ops: by sizes
        decision = by_size(tuple(shape), 1, batch_dim)
    if decision is None:
        return None if output else RowDigest(held.digest(None), True)
    return RowDigest(held.digest(decision), False)


def _reference_ops(reference: Any, probes: Any, batch_dim: Any) -> Any:
    decided = _vote(reference, probes)
    ops = []
    for i, (name, module, inputs, output) in enumerate(reference.ops):
        slots = list(inputs) + [output]
        resolved = [_resolved(h, decided.get((i, j), WHOLE), batch_dim, j == len(inputs))
                    for j, h in enumerate(slots)]
        ops.append(OpRecord(name, module, tuple(resolved[:-1]), resolved[-1]))
    return ops


def _probe_ops(probe: Any) -> Any:
    return [OpRecord(name, module, tuple(RowDigest(*h) for h in inputs),
                     None if output is None else RowDigest(*output))
            for name, module, inputs, output in probe.ops]


def _control_op(reference_ops: Any, template: Any) -> Any:
    """The op whose output row the control probe moves: the first order-dependent op with a
    floating row output in the reference and, at the same index, in the template probe (the first
    probe run, which the control probe repeats), else the first op with one. The same index: a
    reader that compares the control probe with the reference op by op finds it there."""
    if template is None:
        return None
    candidates = [i for i, op in enumerate(reference_ops)
                  if op.output is not None and not op.output.whole and i < len(template.ops)
                  and template.aligned[i] == i and template.floating[i]
                  and isinstance(template.decisions[i][-1], tuple)]
    chosen = next((i for i in candidates if order_dependent(reference_ops[i].op)),
                  candidates[0] if candidates else None)
    if chosen is None:
        return None
    return ControlOp(chosen, reference_ops[chosen].op, reference_ops[chosen].module)


def _row_json(row: Any) -> Any:
    return None if row is None else {"digest": row.digest, "whole": row.whole}


def _probe_line(probe: Any) -> Any:
    config = probe.config
    output = {"digest": probe.output_digest}
    if probe.output_values is not None:
        output["values"] = base64.b64encode(probe.output_values).decode("ascii")
    return {"probe": {"batch_size": config.batch_size, "anchor_row": config.anchor_row,
                      "position": config.position, "neighbours": config.neighbours,
                      "control": config.control},
            "output": output,
            "ops": [{"op": op.op, "module": op.module,
                     "inputs": [_row_json(r) for r in op.inputs], "output": _row_json(op.output)}
                    for op in probe.ops]}


def sweep_text(header: Any, reference: Any, probes: Any) -> Any:
    """The file's text (docs/trace-format.md, "Invariance sweeps"): one JSON object a line."""
    lines = [header, _probe_line(reference)] + [_probe_line(p) for p in probes]
    lines.append({"end": {"probes": len(probes)}})
    return "".join(json.dumps(line, separators=(",", ":"), allow_nan=False) + "\n"
                   for line in lines)


class _EvalMode:
    """Every module in eval mode for the sweep, each module's own flag restored after (a model
    may hold submodules the script froze in eval mode)."""

    def __init__(self, model: Any) -> None:
        self._flags = [(m, m.training) for m in model.modules()]
        self._model = model

    def __enter__(self) -> None:
        self._model.eval()

    def __exit__(self, *exc: Any) -> None:
        for module, training in self._flags:
            module.training = training


def _sweep(torch: Any, model: Any, batch: Any, batch_dim: Any, anchor: Any, count: Any, plan: Any,
           padded: Any = None) -> Any:
    """(header, reference Probe, probes, ControlOp or None)."""
    others = [i for i in range(count) if i != anchor]
    noise_stats = None
    if "noise" in plan.neighbours:
        values = batch if padded is None else torch.cat([s.reshape(-1) for s in padded.samples])
        as_double = values.detach().double()
        noise_stats = (as_double.mean().item(), as_double.std(unbiased=False).item())
    modules, wholes = ModuleStack(model), WholeDigests(model)

    reference = reference_row = None

    def run(config: Any, control: Any = None) -> Any:
        return _run_probe(torch, model, modules, wholes, batch, batch_dim, anchor, config,
                          others, noise_stats, reference, control, padded, reference_row)

    reference_config = ProbeConfig(1, 0, "first", "")
    reference, out, reference_digest, reference_values = run(reference_config)
    reference_row = tuple(out.select(batch_dim, 0).shape)
    runs = []  # (config, ProbeOps, digest, values)
    for config in _configs(plan, padded.lengths if padded is not None else ()):
        probe, _, digest, values = run(config)
        runs.append((config, probe, digest, values))
    reference_ops = _reference_ops(reference, [r[1] for r in runs], batch_dim)
    probes = [Probe(c, d, v, _probe_ops(p)) for c, p, d, v in runs]
    control = _control_op(reference_ops, runs[0][1] if runs else None) if plan.control else None
    if control is not None:
        config = replace(runs[0][0], control=True)
        probe, _, digest, values = run(config, control=control.op_index)
        if (not probe.control_applied or len(probe.ops) <= control.op_index
                or probe.ops[control.op_index][0] != control.op):
            raise RuntimeError(f"repro_audit.invariance: the control probe ran other ops than "
                               f"the probe it repeats ({control.op} at op {control.op_index}): "
                               "the model's ops depend on more than the batch's size")
        probes.append(Probe(config, digest, values, _probe_ops(probe)))
    header = {"kind": KIND, "version": FORMAT_VERSION, "source": "pytorch",
              "model": type(model).__name__, "mode": "", "device": str(out.device),
              "dtype": str(out.dtype), "batch_dim": batch_dim,
              "sample_shape": ([d for i, d in enumerate(batch.shape) if i != batch_dim]
                               if padded is None else list(padded.samples[anchor].shape)),
              "output_shape": [d for i, d in enumerate(out.shape) if i != batch_dim],
              "control": None if control is None else {"op_index": control.op_index,
                                                       "op": control.op,
                                                       "module": control.module}}
    reference_probe = Probe(reference_config, reference_digest, reference_values, reference_ops)
    return header, reference_probe, probes, control


def invariance(model: torch.nn.Module,
               batch: Union[torch.Tensor, Sequence[torch.Tensor]], *, anchor: int = 0,
               batch_dim: int = 0,
               sizes: Optional[Sequence[int]] = None,
               positions: Optional[Sequence[str]] = None,
               neighbours: Optional[Sequence[str]] = None,
               control: Optional[bool] = None,
               out: Union[str, "os.PathLike[str]", None] = None,
               padding: Optional[Padding] = None) -> InvarianceResult:
    """Sweeps `model` (a torch.nn.Module returning one tensor) over batches holding sample
    `anchor` of `batch` (samples along `batch_dim`, in the model's input and output alike) and
    returns what it found; writes the sweep to `out` (or REPRO_AUDIT_INVARIANCE's file). The
    plan, defaults and precedence: the module's documentation. With `padding` (a Padding) every
    probe also runs with the anchor padded to each of its lengths, and `batch` may be a list of
    samples of different lengths. ValueError or TypeError, and no file, for bad input: a size
    below 1, an anchor or batch_dim out of range, a model in train mode with BatchNorm, an
    output that is not one tensor with a row per sample, a padding.dim out of range, a padded
    length not longer than the anchor's, a padded output whose shape changed in more than its
    length."""
    import torch  # the package imports without torch: only a sweep needs it

    plan = resolve_plan(sizes, positions, neighbours, control, out)
    batch_dim, count, padded = _check_inputs(torch, model, batch, anchor, batch_dim, plan,
                                             padding)
    with _EvalMode(model), torch.no_grad():
        header, reference, probes, control_op = _sweep(torch, model, batch, batch_dim, anchor,
                                                       count, plan, padded)
    if plan.out is not None:
        write_whole(plan.out, sweep_text(header, reference, probes))
    differing = [p.config for p in probes
                 if not p.config.control and p.output_digest != reference.output_digest]
    seen = None
    if control_op is not None:
        i = control_op.op_index
        seen = probes[-1].ops[i].output != probes[0].ops[i].output
    return InvarianceResult(path=plan.out, probe_count=len(probes), differing=differing,
                            reference=reference, probes=probes, control=control_op,
                            control_seen=seen)
