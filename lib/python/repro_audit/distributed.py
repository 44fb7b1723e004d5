"""One trace per rank of a data-parallel run (docs/distributed.md).

Under `torch.distributed` (torchrun sets RANK and WORLD_SIZE; a script may also have initialised
the process group itself) every rank records its own trace, with its rank and the world size in
the header's `distributed` field. Rank 0 writes the run's trace, REPRO_AUDIT_TRACE
(run-NNN.trace.jsonl), so the audit folder's manifest, --resume and shards see the run as before;
rank r >= 1 writes rank-R.trace.jsonl in the run's folder (run-NNN/), beside what the run keeps.
`repro-audit exec` takes a run for whole only when every rank's trace is (lib/audit/exec_audit.cpp)
and compares rank r of each run with rank r of the reference run.

    header["distributed"] = {"rank": 1, "world_size": 2, "backend": "gloo",
                             "nccl": {"NCCL_ALGO": "Ring"}}   # only the NCCL_* variables set
"""
from typing import Any
import os

TRACE_SUFFIX = ".trace.jsonl"


class Placement:
    """Where one process stands in a data-parallel run: its rank and the world size."""

    def __init__(self, rank: Any, world_size: Any, backend: Any = None) -> None:
        self.rank, self.world_size, self.backend = rank, world_size, backend

    def header(self, nccl: Any) -> Any:
        """The header's `distributed` field; `nccl`: the NCCL_* variables set (settings.py: what
        pins NCCL's reduction, which has no determinism switch, only the algorithm and
        protocol)."""
        return {"rank": self.rank, "world_size": self.world_size,
                "backend": self.backend or "unknown", "nccl": nccl}

    def trace_path(self, run_trace: Any) -> Any:
        """Rank 0's trace is the run's; rank r's is rank-R.trace.jsonl in the run's folder (the
        run's trace name without .trace.jsonl), made if missing."""
        if self.rank == 0:
            return run_trace
        if not run_trace.endswith(TRACE_SUFFIX) or len(run_trace) == len(TRACE_SUFFIX):
            raise ValueError(f"repro_audit: REPRO_AUDIT_TRACE={run_trace!r}: a data-parallel "
                             f"run's trace must end in {TRACE_SUFFIX} (rank {self.rank}'s goes in "
                             "the folder of that name without it)")
        folder = run_trace[:-len(TRACE_SUFFIX)]
        os.makedirs(folder, exist_ok=True)
        return os.path.join(folder, rank_trace_name(self.rank))


def unwrapped(model: Any) -> Any:
    """The module a DistributedDataParallel wrapper replicates, else `model`: its parameters are
    recorded under the module's own names ("0.weight", not "module.0.weight"), so a data-parallel
    run's trace lines up with a single process's (world size as a configuration, compare)."""
    try:
        from torch.nn.parallel import DistributedDataParallel
    except ImportError:
        return model
    return model.module if isinstance(model, DistributedDataParallel) else model


def rank_trace_name(rank: Any) -> Any:
    return f"rank-{rank}{TRACE_SUFFIX}"


def _backend(torch: Any) -> Any:
    try:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            return str(dist.get_backend())
    except (ImportError, RuntimeError):
        pass
    return None


def placement(torch: Any, world: Any, rank: Any) -> Any:
    """This process's Placement, or None for a single process (`world`: WORLD_SIZE, 1 when
    unset, and no process group of more than one rank). An initialised process group wins over
    the environment's WORLD_SIZE and RANK (checked in settings.py as the audit's variables are)."""
    backend = _backend(torch)
    if backend is not None:
        import torch.distributed as dist
        rank, world = dist.get_rank(), dist.get_world_size()
    if world <= 1:
        return None
    if rank >= world:
        raise ValueError(f"repro_audit: RANK={rank} is not below WORLD_SIZE={world}")
    return Placement(rank, world, backend)
