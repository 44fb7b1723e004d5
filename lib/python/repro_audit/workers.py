"""What each DataLoader worker starts its random streams from (docs/pytorch.md, "Loader workers").

A DataLoader forks its workers from the main process, so every random generator the dataset holds
is copied into each worker with the same state. PyTorch reseeds torch, Python's `random` and
numpy's global generator per worker; it cannot reseed a `numpy.random.Generator`, a
`RandomState` or a `torch.Generator` kept as an attribute of the dataset: every worker then draws
the same "random" augmentations. `worker_init_fn` records, in each worker as it starts, a digest of
every such state, after the script's own worker_init_fn ran (a script that reseeds them there
is not flagged); the recorder puts them in the trace (the end record's `loader_workers`) and the
report names the streams that two or more workers of one loader pass share.

    loader = DataLoader(ds, num_workers=4, worker_init_fn=repro_audit.worker_init_fn)
    rec.watch_loader(loader)     # or let the recorder install it (chains an existing one)

The worker writes one JSON line to `<trace>.workers` (appended in one write: lines from workers
running at once do not mix); the recorder reads the file when the run ends and removes it.
"""
from typing import Any, Callable, Optional
import json
import os
import random

from . import digest as digests
from . import settings

TRACE_VARIABLE = settings.TRACE


def side_file(trace_path: Any) -> Any:
    return trace_path + ".workers"


def _generator_state(value: Any) -> Any:
    """A digest of `value`'s state when it is a random generator, else None."""
    try:
        import numpy
        if isinstance(value, numpy.random.Generator):
            return digests.text_digest(repr(value.bit_generator.state))
        if isinstance(value, numpy.random.RandomState):
            return digests.text_digest(repr(value.get_state()))
    except ImportError:
        pass
    import torch
    if isinstance(value, torch.Generator):
        return digests.tensor_digest(value.get_state())
    return None


def _dataset_streams(dataset: Any, prefix: Any = "dataset", depth: Any = 0) -> Any:
    """Generators held by the dataset (and by datasets it wraps, one level: Subset, ConcatDataset
    members), by attribute path."""
    streams = {}
    for name, value in sorted(vars(dataset).items() if hasattr(dataset, "__dict__") else []):
        state = _generator_state(value)
        if state is not None:
            streams[f"{prefix}.{name}"] = state
        elif depth == 0 and hasattr(value, "__getitem__") and hasattr(value, "__dict__"):
            streams.update(_dataset_streams(value, f"{prefix}.{name}", depth + 1))
    return streams


def host_rng_states(torch: Any) -> Any:
    """Digests of the process's global random states: torch's CPU generator, Python's `random`
    and numpy's global generator (the recorder's header and every loader worker record them)."""
    states = {"torch": digests.tensor_digest(torch.get_rng_state()),
              "python_random": digests.text_digest(repr(random.getstate()))}
    try:
        import numpy
        states["numpy"] = digests.text_digest(repr(numpy.random.get_state()))
    except ImportError:
        pass
    return states


def worker_streams(worker_id: Any, info: Any, torch: Any) -> Any:
    """The record of one worker as it starts: its id, the loader pass it belongs to (the base
    seed PyTorch drew for that pass: seed - id) and a digest per random stream."""
    streams = host_rng_states(torch)
    streams.update(_dataset_streams(info.dataset))
    return {"worker": int(worker_id), "workers": int(info.num_workers),
            "loader_pass": int(info.seed) - int(worker_id), "streams": streams}


def worker_init_fn(worker_id: int, _chained: Optional[Callable[[int], object]] = None) -> None:
    """A DataLoader worker_init_fn: calls the function it chains, if any (the script's own, which
    may reseed the dataset's generators), then records the streams the worker starts drawing
    from (nothing when no audit asked for a trace)."""
    if _chained is not None:
        _chained(worker_id)
    path = settings.trace_named()
    if path:
        import torch
        info = torch.utils.data.get_worker_info()  # type: ignore[no-untyped-call]
        line = json.dumps(worker_streams(worker_id, info, torch), sort_keys=True) + "\n"
        fd = os.open(side_file(path), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)


class ChainedWorkerInit:
    """The loader's own worker_init_fn, then the record (a class, not a closure: workers started with
    the spawn method pickle it)."""

    def __init__(self, chained: Any) -> None:
        self.chained = chained

    def __call__(self, worker_id: Any) -> None:
        worker_init_fn(worker_id, self.chained)


def install(loader: Any) -> Any:
    """Makes `loader` record its workers' streams, keeping the worker_init_fn it had."""
    current = loader.worker_init_fn
    if current is worker_init_fn or isinstance(current, ChainedWorkerInit):
        return loader
    loader.worker_init_fn = ChainedWorkerInit(current) if current is not None else worker_init_fn
    return loader


def remove_side_file(trace_path: Any) -> None:
    """Removes what an earlier, killed run's workers left for this trace, unread: it is not this
    run's, and a line a killed worker cut short must not stop this run from starting."""
    try:
        os.remove(side_file(trace_path))
    except FileNotFoundError:
        pass


def read_side_file(trace_path: Any) -> Any:
    """The worker records written for this trace, in the order the workers started; the file is
    removed. A line cut short (a worker killed mid-write) is an error: a trace is whole or not
    written."""
    path = side_file(trace_path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return []
    records = [json.loads(line) for line in text.splitlines() if line]
    os.remove(path)
    return records
