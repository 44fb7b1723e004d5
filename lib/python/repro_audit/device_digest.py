"""Digests of CUDA tensors computed where they live (docs/pytorch.md, "Digests on the GPU").

A digest is the tool's (digest.py): XXH3-128 of each 64 KiB chunk of the raw bytes, then of a
header and the chunk digests. On a GPU the chunk digests are what costs: ResNet-18's weights,
gradients and momentum are 140 MB a step, which a host copy moves over PCIe and hashes on one CPU
core (4.9x the step on an H100). Here the chunks are hashed on the GPU by the engine's own kernel
(kernels/digest.cu through the C ABI of kernels/digest_abi, loaded with ctypes from the library
that REPRO_AUDIT_DEVICE_DIGEST_LIBRARY names: `repro-audit exec` sets it), queued on the current
stream in order with the training's kernels, and only the 16-byte chunk digests come back, once,
when the batch is collected; the headers are folded on the host.

Where the library or a GPU is missing, every tensor is digested on the host, with the same
result; `Digester.where` says which, and the recorder writes it in the trace's environment.
"""
from typing import Any
import ctypes

from . import digest as digests

LIBRARY_VARIABLE = "REPRO_AUDIT_DEVICE_DIGEST_LIBRARY"
ABI_VERSION = 1  # kernels/digest_abi/device_digest.h RA_DEVICE_DIGEST_ABI_VERSION


class DeviceDigestError(RuntimeError):
    """The GPU refused a digest launch (the CUDA error's text), or the library is not the one
    this package was written for."""


class _Job(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("bytes", ctypes.c_uint64),
                ("first_chunk", ctypes.c_uint64)]


class DeviceDigestLibrary:
    """libra_device_digest.so, loaded and checked: its ABI version and chunk size are this
    package's."""

    def __init__(self, path: Any) -> None:
        self.path = path
        lib = ctypes.CDLL(path)
        lib.ra_device_digest_abi_version.restype = ctypes.c_int
        lib.ra_device_digest_chunk_bytes.restype = ctypes.c_uint64
        lib.ra_device_digest_enqueue.restype = ctypes.c_int
        lib.ra_device_digest_enqueue.argtypes = [ctypes.POINTER(_Job), ctypes.c_int,
                                                 ctypes.c_void_p, ctypes.c_uint64,
                                                 ctypes.c_void_p]
        lib.ra_device_digest_error_text.restype = ctypes.c_char_p
        lib.ra_device_digest_error_text.argtypes = [ctypes.c_int]
        version = lib.ra_device_digest_abi_version()
        if version != ABI_VERSION:
            raise DeviceDigestError(f"{path} has ABI version {version}, this package {ABI_VERSION}")
        chunk = lib.ra_device_digest_chunk_bytes()
        if chunk != digests.CHUNK_BYTES:
            raise DeviceDigestError(f"{path} cuts {chunk}-byte chunks, the digest definition "
                                    f"{digests.CHUNK_BYTES}")
        self._lib = lib

    def enqueue(self, jobs: Any, out_pointer: Any, out_chunks: Any, stream: Any) -> None:
        """Queues the chunk digests of `jobs` [(address, bytes, first_chunk)] on `stream` (a
        cudaStream_t as an int) into the device memory at out_pointer."""
        array = (_Job * len(jobs))(*[_Job(a, b, c) for a, b, c in jobs])
        code = self._lib.ra_device_digest_enqueue(array, len(jobs), out_pointer, out_chunks,
                                                  stream)
        if code != 0:
            text = self._lib.ra_device_digest_error_text(code).decode("utf-8", "replace")
            raise DeviceDigestError(f"repro_audit: the GPU digest launch failed: {text}")


def load_library(torch: Any, path: Any) -> Any:
    """(the library or None, where digests are made, in words, for the trace's environment):
    `path` is REPRO_AUDIT_DEVICE_DIGEST_LIBRARY's value (settings.py), or None."""
    if not torch.cuda.is_available():
        return None, "host: no GPU"
    if not path:
        return None, (f"host: {LIBRARY_VARIABLE} is not set (repro-audit exec sets it where its "
                      "build has the library)")
    try:
        library = DeviceDigestLibrary(path)
    except (OSError, AttributeError, DeviceDigestError) as e:
        return None, f"host: {LIBRARY_VARIABLE}={path} could not be used: {e}"
    return library, f"device: {path} (kernels/digest.cu, ABI {ABI_VERSION})"


class Pending:
    """A digest (or a copied value) that a batch fills in when it is collected."""

    __slots__ = ("value",)

    def __init__(self, value: Any = None) -> None:
        self.value = value

    def __repr__(self) -> Any:
        return "Pending(%r)" % (self.value,)


def resolved(value: Any) -> Any:
    """`value` with every Pending in it (in lists and dicts too) replaced by what it holds."""
    if isinstance(value, Pending):
        return value.value
    if isinstance(value, list):
        return [resolved(v) for v in value]
    if isinstance(value, dict):
        return {k: resolved(v) for k, v in value.items()}
    return value


class DigestBatch:
    """Digests asked for together and read together: add() each tensor (a CUDA one is queued,
    any other digested at once), launch() the queued ones (before anything writes them: the
    GPU reads them in stream order), then collect() waits once and fills every Pending. download()
    starts the copy back without waiting, so that a step's digests come back while the next step
    runs."""

    def __init__(self, torch: Any, library: Any) -> None:
        self._torch = torch
        self._library = library
        self._tags = {torch.float32: digests.F32, torch.int32: digests.I32,
                      torch.int64: digests.I64, torch.uint8: digests.U8}
        self._queued: Any = {}     # device index -> [(tensor, bytes, Pending, tag, shape)]
        # (device index, out tensor, [(Pending, first_chunk, chunks, tag, shape)])
        self._launched: Any = []
        self._copies: Any = []     # (Pending, device tensor): values copied back with the digests
        # (event, [(host tensor, [launched entries])], [(Pending, host)])
        self._download: Any = None

    def add(self, tensor: Any, tag: Any = None, shape: Any = None, raw: Any = False) -> Any:
        """The digest of `tensor`'s bytes (a Pending of it while the GPU computes it) as a
        tensor of trace type `tag` and `shape` (default: the tensor's own, digest.tag_of; op
        records pass the flat form, and `raw` when the tensor has its conjugate and negative
        views resolved)."""
        torch = self._torch
        t = tensor
        if tag is None:
            tag = self._tags.get(t.dtype)
            if tag is None:
                tag = digests.tag_of(torch, t.dtype)
        # Conjugate and negative views (whose memory is not their values) exist for complex
        # dtypes, never for the four the trace names: a step's weights, gradients and state skip
        # the checks, and the detach, which a read of their memory does not need.
        if not raw and t.dtype not in self._tags:
            t = t.detach()
            if t.is_conj():
                t = t.resolve_conj()
            if t.is_neg():
                t = t.resolve_neg()
        shape = tuple(t.shape) if shape is None else tuple(shape)
        if self._library is None or t.device.type != "cuda":  # the digest itself, at once
            host = t.detach().to("cpu").contiguous()
            data = host.reshape(-1).view(torch.uint8).numpy() if host.numel() else b""
            return digests.digest_bytes(tag, shape, data)
        if not t.is_contiguous():
            t = t.contiguous()  # a copy on the current stream: read in order after it
        pending = Pending()
        self._queued.setdefault(t.device.index, []).append(
            (t, t.numel() * t.element_size(), pending, tag, shape))
        return pending

    def add_copy(self, tensor: Any) -> Any:
        """A Pending for `tensor` itself, on the host (a loss read without a wait of its own)."""
        t = tensor.detach()
        if t.device.type != "cuda":
            return Pending(t.to("cpu").clone())
        pending = Pending()
        self._copies.append((pending, t.clone()))
        return pending

    def launch(self) -> None:
        """Queues the digests of every tensor added since the last launch on its device's current
        stream; the tensors are not held after (PyTorch's allocator reuses their memory in the
        same stream's order, after the digest has read it)."""
        torch = self._torch
        queued, self._queued = self._queued, {}
        for device, items in queued.items():
            jobs, entries, chunks = [], [], 0
            for tensor, size, pending, tag, shape in items:
                count = digests.chunk_count(size)
                jobs.append((tensor.data_ptr() if size else 0, size, chunks))
                entries.append((pending, chunks, count, tag, shape))
                chunks += count
            out = torch.empty(max(chunks, 1) * 16, dtype=torch.uint8,
                              device=torch.device("cuda", device))
            with torch.cuda.device(device):
                stream = torch.cuda.current_stream(device).cuda_stream
                self._library.enqueue(jobs, out.data_ptr(), chunks, stream)
            self._launched.append((device, out, entries))

    def download(self) -> None:
        """Launches what is queued and starts copying every chunk digest back (one copy per device
        and batch), without waiting."""
        if self._download is not None:
            return
        self.launch()
        torch = self._torch
        by_device: Any = {}
        for device, out, entries in self._launched:
            by_device.setdefault(device, []).append((out, entries))
        copies = []
        for device, launches in by_device.items():
            joined = torch.cat([out for out, _ in launches]) if len(launches) > 1 else launches[0][0]
            offsets, at = [], 0
            for out, entries in launches:
                offsets.append((at, entries))
                at += out.numel()
            copies.append((joined.to("cpu", non_blocking=True), offsets))
        values = [(p, t.to("cpu", non_blocking=True)) for p, t in self._copies]
        devices = set(by_device) | {t.device.index for _, t in self._copies}
        events = []
        for device in devices:  # each device's copies end on its current stream
            with torch.cuda.device(device):
                event = torch.cuda.Event()
                event.record()
                events.append(event)
        self._launched, self._copies = [], []
        self._download = (events, copies, values)

    def collect(self) -> None:
        """Waits for the copies (once) and fills every Pending of the batch."""
        self.download()
        events, copies, values = self._download
        self._download = None
        for event in events:
            event.synchronize()
        for host, offsets in copies:
            data = host.numpy().tobytes()
            for at, entries in offsets:
                for pending, first, count, tag, shape in entries:
                    begin = at + first * 16
                    pending.value = digests.digest_from_chunks(tag, shape,
                                                               data[begin:begin + count * 16])
        for pending, host in values:
            pending.value = host


class Digester:
    """Where a run's tensors are digested (`where`, for the trace's environment), and batches
    that digest them there."""

    def __init__(self, torch: Any, library_path: Any = None) -> None:
        """`library_path`: REPRO_AUDIT_DEVICE_DIGEST_LIBRARY's value, or None (host digests)."""
        self._torch = torch
        self.library, self.where = load_library(torch, library_path)

    @property
    def on_device(self) -> Any:
        return self.library is not None

    def batch(self) -> Any:
        return DigestBatch(self._torch, self.library)
