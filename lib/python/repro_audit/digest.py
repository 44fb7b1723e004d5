"""Digests byte-identical to the C++ tool's (lib/core/digest.h, docs/trace-format.md "Digests").

A digest is XXH3-128, chunked: the raw little-endian bytes are cut into 64 KiB chunks, each gets
its XXH3-128 (16 bytes: low word, then high word); the digest is the XXH3-128 of one dtype byte
(1 f32, 2 i32, 3 i64, 4 u8; DTYPE_TAGS below for the others), the rank as uint64, the dims as int64, then the chunk digests in
order. Written as 32 hex digits, high word first. Two tensors share a digest only when their
dtype, shape and every bit agree.
"""
from typing import TYPE_CHECKING, Any, Sequence, Union

if TYPE_CHECKING:  # the package imports without torch
    import torch

Buffer = Union[bytes, bytearray, memoryview]  # what digest_bytes reads
import struct

import xxhash

CHUNK_BYTES = 64 * 1024

# The element types of the trace format, by their tag.
F32, I32, I64, U8 = 1, 2, 3, 4

_MASK64 = (1 << 64) - 1


def _halves(value: Any) -> Any:
    """(low, high) 64-bit words of a 128-bit XXH3 digest."""
    return value & _MASK64, value >> 64


def digest_from_chunks(dtype: Any, shape: Any, chunk_digests: Any) -> str:
    """The digest of a tensor of `dtype` and `shape` from its chunk digests: bytes, 16 per chunk
    (low word, then high word, little-endian), as the host computes them below and the GPU
    writes them (device_digest.py)."""
    message = bytearray(struct.pack("<BQ", dtype, len(shape)))
    message += struct.pack("<%dq" % len(shape), *shape)
    message += chunk_digests
    low, high = _halves(xxhash.xxh3_128(bytes(message)).intdigest())
    return "%016x%016x" % (high, low)


def chunk_count(byte_count: Any) -> Any:
    return (byte_count + CHUNK_BYTES - 1) // CHUNK_BYTES


def digest_bytes(dtype: int, shape: Sequence[int], data: "Buffer") -> str:
    """The digest of `data` (bytes-like, little-endian) as a tensor of `dtype` and `shape`."""
    view = memoryview(data).cast("B")
    chunks = bytearray()
    for begin in range(0, len(view), CHUNK_BYTES):
        low, high = _halves(xxhash.xxh3_128(view[begin:begin + CHUNK_BYTES]).intdigest())
        chunks += struct.pack("<QQ", low, high)
    return digest_from_chunks(dtype, shape, chunks)


def text_digest(text: str) -> str:
    """The digest of a text as the tool digests a spec's canonical JSON: its UTF-8 bytes as u8."""
    data = text.encode("utf-8")
    return digest_bytes(U8, (len(data),), data)


# Every other dtype is digested as its raw little-endian bytes, under a tag of its own (so no two
# dtypes share a digest), its name beside the digest in the trace header (docs/trace-format.md
# "Digests"): name -> (tag, trace name).
DTYPE_TAGS = {
    "float32": (F32, "f32"), "int32": (I32, "i32"), "int64": (I64, "i64"), "uint8": (U8, "u8"),
    "float16": (5, "f16"), "bfloat16": (6, "bf16"), "float64": (7, "f64"), "int16": (8, "i16"),
    "int8": (9, "i8"), "bool": (10, "bool"), "complex32": (11, "c32"), "complex64": (12, "c64"),
    "complex128": (13, "c128"), "uint16": (14, "u16"), "uint32": (15, "u32"),
    "uint64": (16, "u64"), "float8_e4m3fn": (17, "f8e4m3fn"), "float8_e5m2": (18, "f8e5m2"),
    "float8_e4m3fnuz": (19, "f8e4m3fnuz"), "float8_e5m2fnuz": (20, "f8e5m2fnuz"),
}


def _tag_of(torch: Any, dtype: Any) -> Any:
    """(tag, trace name) of a torch dtype: every dtype whose values are its bytes has one."""
    found = DTYPE_TAGS.get(str(dtype).replace("torch.", ""))
    if found is None:
        raise TypeError(
            f"repro_audit: a {dtype} tensor has no digest (its values are not its bytes: a "
            "quantized tensor); record tensor.dequantize() or leave the tensor out")
    return found


def tag_of(torch: Any, dtype: Any) -> Any:
    """The trace tag of a torch dtype (device_digest.py digests the same bytes under it)."""
    return _tag_of(torch, dtype)[0]


def dtype_name(tensor: Any) -> Any:
    """The trace's name of a tensor's dtype: "f32", "bf16", ..."""
    import torch
    return _tag_of(torch, tensor.dtype)[1]


def tensor_digest(tensor: "torch.Tensor") -> str:
    """The digest of a torch tensor's values (copied to the host, in row-major order): f32, i32,
    i64 and u8 under their tags, every other dtype as its raw bytes under its own tag."""
    import torch  # the package imports without torch: only the recorder needs it

    host = tensor.detach().to("cpu").contiguous()
    tag, _ = _tag_of(torch, host.dtype)
    if tag > U8:  # numpy has no bf16: the bytes, through a flat u8 view
        host = host.resolve_conj().resolve_neg().contiguous()
        data = host.reshape(-1).view(torch.uint8).numpy() if host.numel() else b""
        return digest_bytes(tag, tuple(host.shape), data)
    # The array's own buffer, not a copy: a step's weights, gradients and optimizer state are
    # tens of MB, and a copy of each would double what passes through the caches.
    data = host.numpy() if host.numel() else b""
    return digest_bytes(tag, tuple(host.shape), data)


def digest_of_digests(digests: Any) -> Any:
    """One digest over several: of their hex texts joined by newlines, as u8 (the recorder's
    digest of all optimizer state tensors, in the header's name order)."""
    return text_digest("\n".join(digests))
