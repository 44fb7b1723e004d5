"""Replays a kept op (kept_op.py) in this fresh process:

    python3 -m repro_audit.replay RUN/kept-op.pt --sha256 HEX --times K --out RUN/replay.json

The file is read once, checked against --sha256 (the digest the recorder computed when it wrote
the file, kept in its memory: never read from the folder, which others may write) and only then
loaded, with `torch.load(..., weights_only=True)`, from the bytes checked. A file with another
digest is refused unloaded: whoever can write into the audit's folder cannot have code run here.
The op is called K times on copies of its kept inputs, on the devices the run had them, with the
run's switches; the outputs' digests (the op records' flat form) are counted. One distinct output
that equals the run's: the op is deterministic here, and runs that differ at it differ by a
setting or an input. More than one: the kernel itself gives other bits on the same inputs.
replay.json, written whole: {"op", "step", "index", "times", "distinct_outputs", "outputs":
[digests of each replay's outputs], "matches_run": whether the first replay's outputs are the
run's, "switches"} (lib/rundir/kept_op_replay.cpp reads it). Exit 0 when it wrote the file,
REFUSED_EXIT (2) when the file is refused (not the recorder's bytes, or not a kept op), 3 when
the op could not be run here (no GPU, an op this PyTorch lacks)."""
import argparse
import hashlib
import json
import os
import stat
import sys
from typing import Any, Callable, Dict, List, Tuple

from . import kept_op, op_digests
from .trace import write_whole

REFUSED_EXIT = 2
COULD_NOT_RUN_EXIT = 3


class Refused(ValueError):
    """The kept op's file is not loaded: the message names it and says why."""


def read_checked(path: str, sha256: str) -> bytes:
    """The bytes of `path`, read once, when their SHA-256 is `sha256`; Refused otherwise (and for
    a link, a FIFO or anything but a regular file, which the recorder never writes)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise Refused(f"{path}: cannot be opened ({e.strerror}; a link is never followed)"
                      ) from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise Refused(f"{path}: not a regular file")
        data = f.read()
    found = hashlib.sha256(data).hexdigest()
    if found != sha256.lower():
        raise Refused(f"{path}: refused, not loaded: its SHA-256 is {found}, not {sha256}, the "
                      "digest of the file the recorder wrote (it was changed since)")
    return data


def resolve_op(torch: Any, name: Any) -> Any:
    """torch.ops.aten.sum.default from "aten.sum.default"."""
    namespace, _, rest = name.partition(".")
    packet, _, overload = rest.partition(".")
    return getattr(getattr(getattr(torch.ops, namespace), packet), overload or "default")


def outputs_digest(torch: Any, out: Any) -> Any:
    """The digests of a call's outputs as its op record has them, joined."""
    from .op_records import _leaves
    digests = []
    for value in _leaves(out, []):
        if isinstance(value, torch.Tensor):
            digests.append(op_digests.flat_digest(torch, value))
        elif value is not None:
            digests.append(op_digests.value_digest(torch, value))
    return digests


def _arguments(torch: Any, call: Dict[str, Any], tensors: List[Any],
               place: Callable[[Any, str], Any]) -> Tuple[Any, ...]:
    """The call's (args, kwargs), each tensor place(kept tensor, device)."""
    def tensor(i: Any, device: Any) -> Any:
        if not 0 <= i < len(tensors):
            raise ValueError(f"tensor {i} of {len(tensors)}")
        return place(tensors[i], device)
    kwargs = call["kwargs"]
    if not isinstance(kwargs, dict) or not isinstance(call["args"], list):
        raise ValueError("not a kept op (its arguments)")
    return (kept_op.decode(torch, call["args"], tensor),
            {k: kept_op.decode(torch, v, tensor) for k, v in kwargs.items()})


def _fresh_copy(tensor: Any, device: str) -> Any:
    """A copy on the run's device: an in-place op writes its inputs, each replay starts from the
    kept values."""
    return tensor.to(device, copy=True)


def replay(torch: Any, call: Dict[str, Any], tensors: List[Any], times: int) -> Dict[str, Any]:
    kept_op.apply_switches(torch, call["switches"])
    op = resolve_op(torch, call["op"])
    seen = []
    for _ in range(times):
        args, kwargs = _arguments(torch, call, tensors, _fresh_copy)
        out = op(*args, **kwargs)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        seen.append(outputs_digest(torch, out))
    distinct = []
    for digests in seen:
        if digests not in distinct:
            distinct.append(digests)
    return {"op": call["op"], "step": call["step"], "index": call["index"], "times": times,
            "distinct_outputs": len(distinct), "outputs": distinct,
            "matches_run": seen[0] == call["recorded_outputs"], "switches": call["switches"]}


def _load(torch: Any, path: str, sha256: str) -> Tuple[Any, ...]:
    """(call, tensors) of the kept op at `path`; Refused naming the file otherwise."""
    data = read_checked(path, sha256)
    try:
        call, tensors = kept_op.load(torch, data)
        _arguments(torch, call, tensors, lambda t, device: t)  # decodes, or says what is wrong
    except Exception as e:  # torch.load raises anything a damaged file makes it raise
        raise Refused(f"{path}: not a kept op ({e})") from None
    return call, tensors


def main(argv: Any = None) -> Any:
    parser = argparse.ArgumentParser(prog="python3 -m repro_audit.replay")
    parser.add_argument("kept")
    parser.add_argument("--sha256", required=True,
                        help="the SHA-256 of the kept op's file as the recorder wrote it")
    parser.add_argument("--times", type=int, default=kept_op.DEFAULT_REPLAYS)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if not 1 <= args.times <= 1000:
        parser.error("--times: expected an integer from 1 to 1000")
    import torch
    try:
        call, tensors = _load(torch, args.kept, args.sha256)
    except Refused as e:
        print(f"repro_audit.replay: {e}", file=sys.stderr)
        return REFUSED_EXIT
    try:
        result = replay(torch, call, tensors, args.times)
    except (RuntimeError, AttributeError, TypeError, ValueError) as e:
        print(f"repro_audit.replay: {call['op']} could not be replayed here: {e}",
              file=sys.stderr)
        return COULD_NOT_RUN_EXIT
    write_whole(args.out, json.dumps(result, sort_keys=True, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
