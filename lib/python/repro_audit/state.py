"""What the recorder digests of a model and its optimizer (docs/pytorch.md, "What is recorded"):
every parameter and its gradient, every buffer (BatchNorm's running statistics and
`num_batches_tracked` included) and all optimizer state, of any dtype and shape (0-dim and empty
included), each digest with its dtype (digest.py).

Optimizer state is whatever the optimizer keeps per parameter: tensors (Adam's `exp_avg`, its
0-dim `step`), numbers (LBFGS's `n_iter`, floats by their exact bits) and lists of them (LBFGS's
`old_dirs`), one name per key (`exp_avg:0.weight`), all of them in one digest per step.
"""
from typing import Any
from . import digest as digests


def tensor_info(name: Any, tensor: Any) -> Any:
    """A header entry: {"name", "shape", "dtype"}."""
    return {"name": name, "shape": list(tensor.shape), "dtype": digests.dtype_name(tensor)}


def check_name(kind: Any, name: Any) -> None:
    """ValueError now, not when the trace is written: a name the trace cannot hold (a lone
    surrogate is no UTF-8)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"repro_audit: {kind} name {name!r}: expected a non-empty string")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"repro_audit: {kind} name {name!r} is not valid text ({e.reason}); "
                         "give names= that are") from None


def value_digest(torch: Any, value: Any, digest: Any = digests.tensor_digest) -> Any:
    """The digest of one optimizer state value: a tensor by its values (through `digest`, which
    may queue it on the GPU: device_digest.DigestBatch.add), a number by its exact value, a list,
    tuple or dict by its members' (on the host: their digests are folded here)."""
    if isinstance(value, torch.Tensor):
        return digest(value)
    if isinstance(value, (list, tuple)):
        inner = ",".join(value_digest(torch, v) for v in value)
        return digests.text_digest(("[%s]" if isinstance(value, list) else "(%s)") % inner)
    if isinstance(value, dict):
        inner = ",".join("%r:%s" % (k, value_digest(torch, v)) for k, v in sorted(value.items()))
        return digests.text_digest("{%s}" % inner)
    if isinstance(value, float):
        return digests.text_digest("float " + value.hex())
    if isinstance(value, (bool, int)) or value is None:
        return digests.text_digest(repr(value))
    return digests.text_digest("object " + type(value).__qualname__)


class ModelState:
    """The parameters, buffers and optimizer of one run, by the names the trace gives them."""

    def __init__(self, torch: Any, model: Any, optimizer: Any, names: Any = None) -> None:
        self._torch = torch
        self._model = model
        self._optimizer = optimizer
        self.params = list(model.named_parameters())
        if names is not None:
            if len(names) != len(self.params):
                raise ValueError(f"repro_audit: {len(names)} names for {len(self.params)} "
                                 "parameters")
            self.params = [(n, p) for n, (_, p) in zip(names, self.params)]
        self.buffer_names = [n for n, _ in model.named_buffers()]
        for name, _ in self.params:
            check_name("parameter", name)
        for name in self.buffer_names:
            check_name("buffer", name)

    def header_params(self) -> Any:
        return [tensor_info(n, p) for n, p in self.params]

    def header_buffers(self) -> Any:
        buffers = dict(self._model.named_buffers())
        return [tensor_info(n, buffers[n]) for n in self.buffer_names]

    # Each takes the function that digests a tensor: digest.tensor_digest (on the host, at once)
    # or a device_digest.DigestBatch's add (queued on the GPU, its Pending filled later).

    def weights(self, digest: Any = digests.tensor_digest) -> Any:
        return [digest(p) for _, p in self.params]

    def grads(self, digest: Any = digests.tensor_digest) -> Any:
        zero = self._torch.zeros(0)
        return [digest(p.grad if p.grad is not None else zero) for _, p in self.params]

    def buffers(self, digest: Any = digests.tensor_digest) -> Any:
        """Digests of the buffers now, by the header's names: a module may replace a buffer
        (`self.running_mean = ...`), so they are looked up each time; one set to None is
        recorded as absent."""
        now = dict(self._model.named_buffers())
        return [digest(now[n]) if n in now else digests.text_digest("absent")
                for n in self.buffer_names]

    def optimizer_state(self, digest: Any = digests.tensor_digest) -> Any:
        """The names of the optimizer's state values, in a stable order, and their digests."""
        if self._optimizer is None:
            return [], []
        names, values = [], []
        for name, p in self.params:
            for key, value in sorted(self._optimizer.state.get(p, {}).items(),
                                     key=lambda item: str(item[0])):
                names.append(f"{key}:{name}")
                values.append(value_digest(self._torch, value, digest))
        return names, values
