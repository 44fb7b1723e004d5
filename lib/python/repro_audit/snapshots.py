"""Weight snapshots of a run at chosen steps (REPRO_AUDIT_SNAPSHOT_STEPS; `exec --versus` sets it):
the parameters' values after step S, in `weights-step-S.safetensors` of the run's snapshot folder
(the trace's name without .trace.jsonl), the engine's file name and format (safetensors, F32,
metadata `audit_id` and `point`), so that `repro-audit compare` reads them as it reads the
engine's: the equivalence of two programs judged parameter by parameter against the floor
(docs/equivalence.md, "The floor"). float32 parameters only: the comparison measures float32."""
from __future__ import annotations

import json
import os
import struct
from typing import Any, Dict, List, Optional, Sequence, Tuple

TRACE_SUFFIX = ".trace.jsonl"


def snapshot_path(trace_path: str, step: int) -> Optional[str]:
    """Where the snapshot after `step` goes; None for a trace named otherwise."""
    if not trace_path.endswith(TRACE_SUFFIX) or len(trace_path) == len(TRACE_SUFFIX):
        return None
    return os.path.join(trace_path[:-len(TRACE_SUFFIX)], f"weights-step-{step}.safetensors")


def safetensors_bytes(tensors: Sequence[Tuple[str, Any]], metadata: Dict[str, str]) -> bytes:
    """A safetensors file of float32 tensors (torch, on any device) in the given order: an 8-byte
    little-endian header length, the JSON header (offsets into the data), the data."""
    header: Dict[str, Any] = {"__metadata__": metadata}
    chunks: List[bytes] = []
    offset = 0
    for name, tensor in tensors:
        data = tensor.detach().to("cpu").contiguous().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensor.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # the data 8-byte aligned, as safetensors' writers do
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def write_snapshot(trace_path: str, step: int, params: Sequence[Tuple[str, Any]],
                   audit_id: Optional[str]) -> Optional[str]:
    """The float32 parameters after `step` into their file (written whole: a temporary file
    renamed over it); its path, or None where the trace has no snapshot folder."""
    path = snapshot_path(trace_path, step)
    if path is None:
        return None
    import torch
    kept = [(n, p) for n, p in params if p.dtype == torch.float32]
    metadata = {"audit_id": audit_id or "", "point": f"step-{step}"}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    partial = path + ".tmp"
    with open(partial, "wb") as f:
        f.write(safetensors_bytes(kept, metadata))
    os.replace(partial, path)
    return path
