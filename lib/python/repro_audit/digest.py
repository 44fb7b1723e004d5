"""Digests byte-identical to the C++ tool's (lib/core/digest.h, docs/trace-format.md "Digests").

A digest is XXH3-128, chunked: the raw little-endian bytes are cut into 64 KiB chunks, each gets
its XXH3-128 (16 bytes: low word, then high word); the digest is the XXH3-128 of one dtype byte
(1 f32, 2 i32, 3 i64, 4 u8), the rank as uint64, the dims as int64, then the chunk digests in
order. Written as 32 hex digits, high word first. Two tensors share a digest only when their
dtype, shape and every bit agree.
"""
import struct

import xxhash

CHUNK_BYTES = 64 * 1024

# The element types of the trace format, by their tag.
F32, I32, I64, U8 = 1, 2, 3, 4

_MASK64 = (1 << 64) - 1


def _halves(value):
    """(low, high) 64-bit words of a 128-bit XXH3 digest."""
    return value & _MASK64, value >> 64


def digest_from_chunks(dtype, shape, chunk_digests):
    """The digest of a tensor of `dtype` and `shape` from its chunk digests: bytes, 16 per chunk
    (low word, then high word, little-endian), as the host computes them below and the GPU
    writes them (device_digest.py)."""
    message = bytearray(struct.pack("<BQ", dtype, len(shape)))
    message += struct.pack("<%dq" % len(shape), *shape)
    message += chunk_digests
    low, high = _halves(xxhash.xxh3_128(bytes(message)).intdigest())
    return "%016x%016x" % (high, low)


def chunk_count(byte_count):
    return (byte_count + CHUNK_BYTES - 1) // CHUNK_BYTES


def digest_bytes(dtype, shape, data):
    """The digest of `data` (bytes-like, little-endian) as a tensor of `dtype` and `shape`."""
    view = memoryview(data).cast("B")
    chunks = bytearray()
    for begin in range(0, len(view), CHUNK_BYTES):
        low, high = _halves(xxhash.xxh3_128(view[begin:begin + CHUNK_BYTES]).intdigest())
        chunks += struct.pack("<QQ", low, high)
    return digest_from_chunks(dtype, shape, chunks)


def text_digest(text):
    """The digest of a text as the tool digests a spec's canonical JSON: its UTF-8 bytes as u8."""
    data = text.encode("utf-8")
    return digest_bytes(U8, (len(data),), data)


def tag_of(torch, dtype):
    tags = {torch.float32: F32, torch.int32: I32, torch.int64: I64, torch.uint8: U8}
    if dtype not in tags:
        raise TypeError(
            f"repro_audit: a {dtype} tensor has no digest in the trace format (f32, i32, i64, u8); "
            "record float32 values (tensor.float()) or leave the tensor out")
    return tags[dtype]


def tensor_digest(tensor):
    """The digest of a torch tensor's values (copied to the host, in row-major order)."""
    import torch  # the package imports without torch: only the recorder needs it

    host = tensor.detach().to("cpu").contiguous()
    tag = tag_of(torch, host.dtype)
    # The array's own buffer, not a copy: a step's weights, gradients and optimizer state are
    # tens of MB, and a copy of each would double what passes through the caches.
    data = host.numpy() if host.numel() else b""
    return digest_bytes(tag, tuple(host.shape), data)


def digest_of_digests(digests):
    """One digest over several: of their hex texts joined by newlines, as u8 (the recorder's
    digest of all optimizer state tensors, in the header's name order)."""
    return text_digest("\n".join(digests))
