"""What an op record says of each value an aten op reads or writes (docs/pytorch.md, "Op records").

A tensor is digested as the flat array of its elements (shape [numel], as the engine's op records
digest buffers): f32, i32, i64 and u8 tensors by their tags, every other dtype as the u8 array of
its bytes; its type ("f32[64,10]") goes beside the digest. The non-tensor arguments of a call
(numbers, lists, dtypes, devices...) are one more input, "args", and the random state a random op
draws from is another, "generator": both are inputs like any other, so a run that passes another
scalar or starts from another random state is told apart from a kernel that computed differently.
"""
from typing import Any
import math

from . import digest as digests

_SHORT_NAMES = {
    "float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16", "int64": "i64",
    "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "bool",
    "complex64": "c64", "complex128": "c128",
}


def type_text(tensor: Any) -> Any:
    """"f32[64,10]": the tensor's dtype and shape, as an op record's type field has them."""
    name = str(tensor.dtype).replace("torch.", "")
    return "%s[%s]" % (_SHORT_NAMES.get(name, name), ",".join(str(d) for d in tensor.shape))


_TAG_NAMES = {digests.F32: "f32", digests.I32: "i32", digests.I64: "i64", digests.U8: "u8"}
_TAGS_BY_NAME: Any = {}  # torch dtype -> trace tag, filled once torch is at hand


def _init_tags(torch: Any) -> None:
    if not _TAGS_BY_NAME:
        _TAGS_BY_NAME.update({torch.float32: digests.F32, torch.int32: digests.I32,
                              torch.int64: digests.I64, torch.uint8: digests.U8})


def _values(torch: Any, tensor: Any) -> Any:
    """The tensor's values as they are (conjugate and negative views resolved), their trace tag
    and their flat shape: the four dtypes the trace format names as themselves by element count,
    every other one as its bytes (u8)."""
    values = tensor.detach()
    if values.is_conj():
        values = values.resolve_conj()
    if values.is_neg():
        values = values.resolve_neg()
    tag = _TAGS_BY_NAME.get(values.dtype)
    if tag is None:
        return values, digests.U8, (values.numel() * values.element_size(),)
    return values, tag, (values.numel(),)


def _flat_bytes(torch: Any, values: Any) -> Any:
    """The values' bytes as a flat contiguous u8 tensor where they live."""
    flat = values.contiguous().reshape(-1)
    return flat.view(torch.uint8) if flat.numel() else flat.to(torch.uint8)


def flat_digest(torch: Any, tensor: Any, batch: Any = None) -> Any:
    """The digest of a tensor's values as an op record has it (the module's documentation): a
    text, or, given a device_digest.DigestBatch, a Pending of it (queued on the GPU for a CUDA
    tensor: no reshape, no copy)."""
    if tensor.layout != torch.strided:  # sparse, quantized...: what it is, not its values
        return digests.text_digest("%s %s" % (tensor.layout, type_text(tensor)))
    _init_tags(torch)
    values, tag, shape = _values(torch, tensor)
    if batch is not None:
        return batch.add(values, tag, shape, raw=True)
    host = _flat_bytes(torch, values.to("cpu"))
    return digests.digest_bytes(tag, shape, host.numpy() if host.numel() else b"")


def flat_digest_and_bytes(torch: Any, tensor: Any, batch: Any = None) -> Any:
    """The digest of flat_digest and (tag name, values) of the same values, as a kept output
    stores them: on the host, bytes from one host copy; given a batch and a CUDA tensor, a
    Pending digest and a flat u8 copy on the device (KeptOutputs.settle brings it back with the
    step's others)."""
    _init_tags(torch)
    values, tag, shape = _values(torch, tensor)
    if batch is not None and values.device.type == "cuda":
        kept = _flat_bytes(torch, values).clone()
        return batch.add(values, tag, shape, raw=True), (_TAG_NAMES[tag], kept)
    data = _flat_bytes(torch, values.to("cpu")).numpy().tobytes()
    return digests.digest_bytes(tag, shape, data), (_TAG_NAMES[tag], data)


def _value_text(torch: Any, value: Any) -> Any:
    """A non-tensor argument as text that tells every distinct value apart (floats by their
    exact bits)."""
    if isinstance(value, torch.Tensor):
        return "T"
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, float):
        return value.hex() if math.isfinite(value) else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        inner = ",".join(_value_text(torch, v) for v in value)
        return ("[%s]" if isinstance(value, list) else "(%s)") % inner
    if isinstance(value, dict):
        return "{%s}" % ",".join("%s:%s" % (k, _value_text(torch, v))
                                 for k, v in sorted(value.items()))
    if isinstance(value, torch.Generator):
        return "generator"
    if isinstance(value, (torch.UntypedStorage, torch.storage.TypedStorage)):
        return _storage_text(torch, value)
    return repr(value)


def _storage_text(torch: Any, storage: Any) -> Any:
    """A storage (the source of `set_`, as a DataLoader rebuilds a batch) by its bytes: its repr
    would print them all, or where they live."""
    untyped = storage.untyped() if isinstance(storage, torch.storage.TypedStorage) else storage
    view = torch.empty(0, dtype=torch.uint8, device=untyped.device)
    view.set_(untyped)
    return "storage " + flat_digest(torch, view)


def arguments_digest(torch: Any, args: Any, kwargs: Any) -> Any:
    """One digest over the call's non-tensor arguments (tensors stand as "T"), or None when it
    has none."""
    text = _value_text(torch, tuple(args))
    if kwargs:
        text += _value_text(torch, dict(kwargs))
    if all(c in "T(),[]" for c in text):
        return None
    return digests.text_digest(text)


def value_digest(torch: Any, value: Any) -> Any:
    """The digest of a non-tensor result (the float of .item(), a bool)."""
    return digests.text_digest(_value_text(torch, value))
