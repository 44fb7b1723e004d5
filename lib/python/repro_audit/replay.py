"""Replays a kept op (kept_op.py) in this fresh process:

    python3 -m repro_audit.replay RUN_FOLDER/kept-op.pt --times K --out RUN_FOLDER/replay.json

The op is called K times on copies of its kept inputs, on the devices the run had them, with the
run's switches; the outputs' digests (the op records' flat form) are counted. One distinct output
that equals the run's: the op is deterministic here, and runs that differ at it differ by a
setting or an input. More than one: the kernel itself gives other bits on the same inputs.
replay.json, written whole: {"op", "step", "index", "times", "distinct_outputs", "outputs":
[digests of each replay's outputs], "matches_run": whether the first replay's outputs are the
run's, "switches"}. Exit 0 when it wrote the file, 2 when the file is not a kept op, 3 when the
op could not be run here (no GPU, an op this PyTorch lacks)."""
import argparse
import json
import sys

from . import kept_op, op_digests
from .trace import write_whole


def _on_device(torch, value):
    """The kept arguments with every kept tensor copied back to its device."""
    return kept_op.map_tensors(value, lambda t: t["__tensor__"].to(t["device"], copy=True),
                               lambda v: isinstance(v, dict) and "__tensor__" in v)


def resolve_op(torch, name):
    """torch.ops.aten.sum.default from "aten.sum.default"."""
    namespace, _, rest = name.partition(".")
    packet, _, overload = rest.partition(".")
    return getattr(getattr(getattr(torch.ops, namespace), packet), overload or "default")


def outputs_digest(torch, out):
    """The digests of a call's outputs as its op record has them, joined."""
    from .ops import _leaves
    digests = []
    for value in _leaves(out, []):
        if isinstance(value, torch.Tensor):
            digests.append(op_digests.flat_digest(torch, value))
        elif value is not None:
            digests.append(op_digests.value_digest(torch, value))
    return digests


def replay(torch, kept, times):
    kept_op.apply_switches(torch, kept["switches"])
    op = resolve_op(torch, kept["op"])
    seen = []
    for _ in range(times):
        args = _on_device(torch, kept["args"])  # fresh copies: an in-place op writes them
        kwargs = _on_device(torch, kept["kwargs"])
        out = op(*args, **kwargs)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        seen.append(outputs_digest(torch, out))
    distinct = []
    for digests in seen:
        if digests not in distinct:
            distinct.append(digests)
    return {"op": kept["op"], "step": kept["step"], "index": kept["index"], "times": times,
            "distinct_outputs": len(distinct), "outputs": distinct,
            "matches_run": seen[0] == kept.get("recorded_outputs"),
            "switches": kept["switches"]}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m repro_audit.replay")
    parser.add_argument("kept")
    parser.add_argument("--times", type=int, default=kept_op.DEFAULT_REPLAYS)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if not 1 <= args.times <= 1000:
        parser.error("--times: expected an integer from 1 to 1000")
    import torch
    try:
        kept = torch.load(args.kept, map_location="cpu", weights_only=False)  # our own file
        if not isinstance(kept, dict) or not {"op", "args", "kwargs", "switches"} <= set(kept):
            raise ValueError("not a kept op")
    except Exception as e:  # torch.load raises anything a corrupt file makes it raise
        print(f"repro_audit.replay: {args.kept}: not a kept op ({e})", file=sys.stderr)
        return 2
    try:
        result = replay(torch, kept, args.times)
    except (RuntimeError, AttributeError, TypeError) as e:
        print(f"repro_audit.replay: {kept['op']} could not be replayed here: {e}",
              file=sys.stderr)
        return 3
    write_whole(args.out, json.dumps(result, sort_keys=True, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
