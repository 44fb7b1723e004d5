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
import os

from . import env

TRACE_SUFFIX = ".trace.jsonl"
# What pins NCCL's reduction: NCCL has no determinism switch, only the algorithm and protocol.
NCCL_VARIABLES = ("NCCL_ALGO", "NCCL_PROTO")


class Placement:
    """Where one process stands in a data-parallel run: its rank and the world size."""

    def __init__(self, rank, world_size, backend=None):
        self.rank, self.world_size, self.backend = rank, world_size, backend

    def header(self, environ=None):
        """The header's `distributed` field."""
        environ = os.environ if environ is None else environ
        nccl = {name: environ[name] for name in NCCL_VARIABLES if environ.get(name)}
        return {"rank": self.rank, "world_size": self.world_size,
                "backend": self.backend or "unknown", "nccl": nccl}

    def trace_path(self, run_trace):
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


def unwrapped(model):
    """The module a DistributedDataParallel wrapper replicates, else `model`: its parameters are
    recorded under the module's own names ("0.weight", not "module.0.weight"), so a data-parallel
    run's trace lines up with a single process's (world size as a configuration, compare)."""
    try:
        from torch.nn.parallel import DistributedDataParallel
    except ImportError:
        return model
    return model.module if isinstance(model, DistributedDataParallel) else model


def rank_trace_name(rank):
    return f"rank-{rank}{TRACE_SUFFIX}"


def _backend(torch):
    try:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            return str(dist.get_backend())
    except (ImportError, RuntimeError):
        pass
    return None


def placement(torch, environ=None):
    """This process's Placement, or None for a single process (no WORLD_SIZE, or 1, and no
    process group of more than one rank). An initialised process group wins over the
    environment; RANK and WORLD_SIZE are checked as the other audit variables are."""
    environ = os.environ if environ is None else environ
    world = env.integer("WORLD_SIZE", 1, env.RUN_LIMIT, default=1, environ=environ)
    rank = env.integer("RANK", 0, env.RUN_LIMIT, default=0, environ=environ)
    backend = _backend(torch)
    if backend is not None:
        import torch.distributed as dist
        rank, world = dist.get_rank(), dist.get_world_size()
    if world <= 1:
        return None
    if rank >= world:
        raise ValueError(f"repro_audit: RANK={rank} is not below WORLD_SIZE={world}")
    return Placement(rank, world, backend)
