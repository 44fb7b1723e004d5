"""The collective of a data-parallel run, recorded per gradient bucket (docs/distributed.md).

DistributedDataParallel reduces its gradients bucket by bucket, through a communication hook:
its own all-reduce, or the one the script gave `register_comm_hook`. The recorder wraps that hook
and records, for each bucket and step, a digest of the bucket's flat buffer before the collective
and of its result after it, with the bucket's index, its parameters' names and its size. So
`compare` can tell "the same inputs on every rank, another result" (the collective varies) from
inputs that already differ (a cause inside a rank), and name bucket layouts that differ between
runs (DDP rebuilds its buckets after the first step; `bucket_cap_mb`).

    step["collectives"] = [{"bucket": 0, "params": ["2.weight", "2.bias"], "elements": 12,
                            "dtype": "f32", "before": hex, "after": hex}, ...]   # in call order
    header["distributed"]["comm_hook"] = "default" | the script's hook's qualified name
    header["distributed"]["bucket_cap_bytes"] = DDP's bucket_bytes_cap

A reducer takes one hook, once. Under an audit, `watch_registrations` (called on import) makes
DistributedDataParallel.register_comm_hook register the recorder's wrapper around the script's
hook instead, so that a hook registered before `record(...)` is wrapped, and one registered after
replaces the hook inside the wrapper. The default is what DDP's reducer does without a hook:
each gradient multiplied by 1 / world size, then summed (reducer.cpp mark_variable_ready_dense).
"""
from typing import Any
import threading

from .digest import dtype_name

DEFAULT_HOOK = "default"
_ORIGINAL = "_repro_audit_original_register_comm_hook"


class Wrapper:
    """The hook DDP's reducer calls: the inner hook (the script's or the default) with each
    bucket's buffer digested before it and its result after, when a recording is attached."""

    def __init__(self, state: Any, hook: Any, name: Any) -> None:
        self.state, self.hook, self.name = state, hook, name
        self.recording = None

    def replace(self, state: Any, hook: Any, name: Any) -> None:
        self.state, self.hook, self.name = state, hook, name


# DDP refuses a hook annotated with anything but its own classes (GradBucket, Future[Tensor]),
# which need torch at import: the hooks DDP sees are unannotated.
def _comm_hook(wrapper, bucket):  # type: ignore[no-untyped-def]
    """What the reducer calls (its state is the Wrapper): a Future of the bucket's result."""
    recording = wrapper.recording
    if recording is None:
        return wrapper.hook(wrapper.state, bucket)
    entry = recording.before(bucket)
    future = wrapper.hook(wrapper.state, bucket)

    def after(done: Any) -> Any:
        value = done.value()
        recording.after(entry, value[0] if isinstance(value, (list, tuple)) else value)
        return value

    return future.then(after)


def _default_hook(ddp: Any) -> Any:
    """DDP's reducer without a hook: each gradient times 1 / world size (the reducer's own
    multiplication, not allreduce_hook's division, whose bits differ when the world size is no
    power of two), then the sum over the ranks."""
    import torch.distributed as dist
    group = ddp.process_group

    def default(state, bucket):  # type: ignore[no-untyped-def]  # unannotated: _comm_hook's
        buffer = bucket.buffer()
        buffer.mul_(1.0 / dist.get_world_size(group))
        work = dist.all_reduce(buffer, group=group, async_op=True)  # type: ignore[no-untyped-call]
        return work.get_future().then(lambda done: done.value()[0])

    return default


def _hook_name(hook: Any) -> Any:
    return getattr(hook, "__qualname__", None) or type(hook).__qualname__


def _register(ddp: Any, state: Any, hook: Any) -> Any:
    """Registers the recorder's wrapper around (state, hook) on `ddp`, or puts (state, hook) into
    the wrapper it already has. Returns the wrapper."""
    wrapper = getattr(ddp, "_repro_audit_wrapper", None)
    if wrapper is not None:
        wrapper.replace(state, hook, _hook_name(hook))
        return wrapper
    wrapper = Wrapper(state, hook, _hook_name(hook))
    getattr(type(ddp), _ORIGINAL, type(ddp).register_comm_hook)(ddp, wrapper, _comm_hook)
    ddp._repro_audit_wrapper = wrapper
    return wrapper


def watch_registrations() -> None:
    """Makes DistributedDataParallel.register_comm_hook register the recorder's wrapper (once per
    process; only under an audit: the package's __init__ asks only then). Without torch, nothing
    to watch."""
    try:
        from torch.nn.parallel import DistributedDataParallel
    except ImportError:
        return
    if hasattr(DistributedDataParallel, _ORIGINAL):
        return
    original = getattr(DistributedDataParallel, "register_comm_hook")
    setattr(DistributedDataParallel, _ORIGINAL, original)

    def register_comm_hook(self: Any, state: Any, hook: Any) -> None:
        _register(self, state, hook)

    register_comm_hook.__doc__ = original.__doc__
    setattr(DistributedDataParallel, "register_comm_hook", register_comm_hook)


class Recording:
    """The bucket records of the steps of one DDP model, taken by the recorder at each step."""

    def __init__(self, ddp: Any, wrapper: Any, params: Any, digester: Any) -> None:
        self._digester = digester
        self._wrapper = wrapper
        self._names = {p.data_ptr(): name for name, p in params}
        self._lock = threading.Lock()  # gloo may run `after` on its own thread
        self._batch = digester.batch()
        self._entries: Any = []
        self.bucket_cap_bytes = int(getattr(ddp, "bucket_bytes_cap", 0))

    def _digest(self, tensor: Any) -> Any:
        with self._lock:
            digest = self._batch.add(tensor)
            self._batch.launch()  # read now, in stream order, before the collective writes it
            return digest

    def before(self, bucket: Any) -> Any:
        buffer = bucket.buffer()
        entry = {"bucket": int(bucket.index()),
                 "params": [self._names.get(p.data_ptr(), "?") for p in bucket.parameters()],
                 "elements": int(buffer.numel()), "dtype": dtype_name(buffer),
                 "before": self._digest(buffer), "after": None}
        with self._lock:
            self._entries.append(entry)
        return entry

    def after(self, entry: Any, result: Any) -> None:
        entry["after"] = self._digest(result)

    @property
    def hook_name(self) -> Any:
        """The hook inside the wrapper now: a script may register its own after record()."""
        return self._wrapper.name

    def take(self) -> Any:
        """The step's bucket records (Pendings until the batch is collected) and their batch,
        its copy back started."""
        with self._lock:
            entries, batch = self._entries, self._batch
            self._entries, self._batch = [], self._digester.batch()
        batch.download()
        return entries, batch


def install(torch: Any, model: Any, params: Any, digester: Any) -> Any:
    """The Recording of `model`'s buckets and the header's fields, or (None, {}) when `model` is
    no DistributedDataParallel; (None, {...}, warning) when its hook could not be wrapped."""
    from torch.nn.parallel import DistributedDataParallel
    if not isinstance(model, DistributedDataParallel):
        return None, {}, None
    wrapper = getattr(model, "_repro_audit_wrapper", None)
    if wrapper is None:
        try:
            wrapper = _register(model, None, _default_hook(model))
            wrapper.name = DEFAULT_HOOK
        except RuntimeError as e:  # a hook registered before repro_audit was imported
            return None, {}, ("the collective is not recorded: DDP already had a communication "
                              "hook the recorder could not wrap (import repro_audit before "
                              "registering it): %s" % str(e).splitlines()[0])
    recording = Recording(model, wrapper, params, digester)
    wrapper.recording = recording
    return recording, {"comm_hook": wrapper.name,
                       "bucket_cap_bytes": recording.bucket_cap_bytes}, None
