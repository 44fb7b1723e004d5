"""One op kept whole for a magnitude and a replay (docs/pytorch.md, "The root-cause op's
magnitude"): `repro-audit exec --keep-op STEP:INDEX` (REPRO_AUDIT_KEEP_OP) asks each run to keep
the INDEX-th op record of step STEP, whatever the budget of kept outputs: its outputs go to
kept-outputs.bin (compare's magnitude: count, max ULP, max |difference|), and the call itself,
its inputs as they were before it ran, its non-tensor arguments and the switches that choose
kernels, to kept-op.pt in the run's folder. At the run's end the op is replayed there in a fresh
process (replay.py): how many distinct outputs it gives in K replays tells a nondeterministic
kernel (more than one) from a setting that differs between runs (one, the run's own).

kept-op.pt holds no pickled object but tensors and text, so that it loads with
`torch.load(..., weights_only=True)`: {"format": FORMAT, "version": VERSION, "call": JSON text,
"tensors": [host tensors]}. The call's JSON is {"op", "step", "index", "args", "kwargs",
"switches", "torch", "recorded_outputs"}, its arguments encoded by `encode` (a tensor is
{"tensor": i, "device": "cuda:0"}, i its place in "tensors"). The folder is writable by whoever
can write the audit's folder, so the replay loads the file only when its SHA-256 is the one
`save` computed in the recorder's memory, given to the replay process on its command line."""
import hashlib
import io
import json
import os
from typing import Any, Callable, List, NamedTuple, Tuple

from .trace import write_whole

ENVIRONMENT = "REPRO_AUDIT_KEEP_OP"
REPLAYS_ENVIRONMENT = "REPRO_AUDIT_REPLAYS"
DEFAULT_REPLAYS = 10
FILE_NAME = "kept-op.pt"
REPLAY_FILE_NAME = "replay.json"
FORMAT, VERSION = "repro_audit kept op", 2
CALL_KEYS = frozenset({"op", "step", "index", "args", "kwargs", "switches", "torch",
                       "recorded_outputs"})
SWITCH_KEYS = frozenset({"deterministic_algorithms", "cudnn_benchmark", "cudnn_deterministic",
                         "cudnn_allow_tf32", "matmul_allow_tf32", "threads"})


class Unstorable(TypeError):
    """An argument of the kept call that kept-op.pt cannot hold without pickling an object."""


class Written(NamedTuple):
    """A kept-op.pt as `save` wrote it: its path and the SHA-256 of its bytes."""
    path: str
    sha256: str


def parse(text: Any, name: Any = ENVIRONMENT) -> Any:
    """(step, index) of "STEP:INDEX"; ValueError naming the variable (`name`) otherwise."""
    step, colon, index = text.strip().partition(":")
    if not colon or not step.isdigit() or not index.isdigit() or len(step) > 18 or len(index) > 18:
        raise ValueError(f"repro_audit: {name}={text!r}: expected STEP:INDEX, two "
                         "non-negative integers (the root cause's step and op index)")
    return int(step), int(index)


def switches(torch: Any) -> Any:
    """The settings that choose which kernel an op runs, as the run had them."""
    return {
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
        "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
        "cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32),
        "matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "threads": torch.get_num_threads(),
    }


def apply_switches(torch: Any, values: Any) -> None:
    torch.use_deterministic_algorithms(values["deterministic_algorithms"])
    torch.backends.cudnn.benchmark = values["cudnn_benchmark"]
    torch.backends.cudnn.deterministic = values["cudnn_deterministic"]
    torch.backends.cudnn.allow_tf32 = values["cudnn_allow_tf32"]
    torch.backends.cuda.matmul.allow_tf32 = values["matmul_allow_tf32"]
    torch.set_num_threads(values["threads"])


# --- arguments as JSON: every value that is not JSON's own is a one-key object naming its kind ---

# The torch values an aten call takes besides tensors, each kept by its name ("torch.float32"),
# which decode finds again as an attribute of torch.
_TORCH_KINDS = (("dtype", "dtype"), ("layout", "layout"), ("memory_format", "memory_format"))


def encode(torch: Any, value: Any, tensors: List[Any]) -> Any:
    """`value` as JSON values: each tensor copied to the host into `tensors`, its place and device
    kept; floats by their hex form (exact, NaN and infinities included); Unstorable for any other
    object (a Generator, a user's class: what only pickling could keep)."""
    if isinstance(value, torch.Tensor):
        tensors.append(value.detach().to("cpu", copy=True))
        return {"tensor": len(tensors) - 1, "device": str(value.device)}
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return {"float": value.hex()}
    if isinstance(value, complex):
        return {"complex": [value.real.hex(), value.imag.hex()]}
    if isinstance(value, list):
        return [encode(torch, v, tensors) for v in value]
    if isinstance(value, tuple):
        return {"tuple": [encode(torch, v, tensors) for v in value]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {k: encode(torch, v, tensors) for k, v in value.items()}}
    if isinstance(value, torch.device):
        return {"device": str(value)}
    for kind, attribute in _TORCH_KINDS:
        if isinstance(value, getattr(torch, attribute)):
            return {kind: str(value)}
    raise Unstorable(f"an argument of type {type(value).__module__}.{type(value).__name__}, "
                     "which kept-op.pt cannot hold without pickling it")


def decode(torch: Any, value: Any, tensor: Callable[[int, str], Any]) -> Any:
    """The value `encode` gave `value` for; tensor(i, device) makes the i-th tensor. ValueError
    for anything encode never writes."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, list):
        return [decode(torch, v, tensor) for v in value]
    if not isinstance(value, dict):
        raise ValueError(f"not an encoded argument: {value!r}")
    if set(value) == {"tensor", "device"} and type(value["tensor"]) is int:
        return tensor(value["tensor"], _text(value["device"]))
    if len(value) != 1:
        raise ValueError(f"not an encoded argument: {sorted(value)}")
    (kind, inner), = value.items()
    if kind == "float":
        return float.fromhex(_text(inner))
    if kind == "complex" and isinstance(inner, list) and len(inner) == 2:
        return complex(float.fromhex(_text(inner[0])), float.fromhex(_text(inner[1])))
    if kind == "tuple" and isinstance(inner, list):
        return tuple(decode(torch, v, tensor) for v in inner)
    if kind == "dict" and isinstance(inner, dict):
        return {k: decode(torch, v, tensor) for k, v in inner.items()}
    if kind == "device":
        return torch.device(_text(inner))
    for name, attribute in _TORCH_KINDS:
        if kind == name:
            return _torch_value(torch, _text(inner), getattr(torch, attribute))
    raise ValueError(f"not an encoded argument: {kind!r}")


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {value!r}")
    return value


def _torch_value(torch: Any, name: str, kind: type) -> Any:
    """torch.float32 from "torch.float32", only when it is a `kind` (never any other attribute)."""
    prefix, _, attribute = name.partition(".")
    found = getattr(torch, attribute, None) if prefix == "torch" else None
    if not isinstance(found, kind):
        raise ValueError(f"not a {kind.__name__}: {name!r}")
    return found


# --- the call and its file ---

def capture(torch: Any, func: Any, args: Any, kwargs: Any, step: Any, index: Any) -> Any:
    """What a replay needs of a call, taken before it runs (an in-place op changes its inputs):
    {"call": its JSON values, "tensors": its tensors' host copies}; Unstorable when an argument
    cannot be kept without pickling."""
    tensors: Any = []
    call = {"op": str(func), "step": step, "index": index,
            "args": encode(torch, list(args), tensors),
            "kwargs": encode(torch, dict(kwargs), tensors)["dict"], "switches": switches(torch),
            "torch": torch.__version__}
    return {"call": call, "tensors": tensors}


def save(torch: Any, captured: Any, recorded_outputs: Any, folder: Any) -> Written:
    """kept-op.pt in the run's folder, written whole: its path and the SHA-256 of the bytes
    written, which the replay checks before it loads the file (a cryptographic digest, not the
    XXH3 of the trace: the file's reader must not accept one made to look like it)."""
    call = dict(captured["call"], recorded_outputs=recorded_outputs)
    buffer = io.BytesIO()
    torch.save({"format": FORMAT, "version": VERSION, "call": json.dumps(call, sort_keys=True),
                "tensors": captured["tensors"]}, buffer)
    data = buffer.getvalue()
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, FILE_NAME)
    write_whole(path, data)
    return Written(path, hashlib.sha256(data).hexdigest())


def load(torch: Any, data: bytes) -> Tuple[Any, ...]:
    """(call, tensors) of kept-op.pt's bytes, loaded with weights_only (no object is built but
    tensors, lists, dicts and strings); ValueError when they are not a kept op of this version."""
    kept = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    if not isinstance(kept, dict) or kept.get("format") != FORMAT:
        raise ValueError("not a kept op")
    if kept.get("version") != VERSION:
        raise ValueError(f"version {kept.get('version')!r}, this replay reads version {VERSION}")
    tensors, call = kept.get("tensors"), json.loads(_text(kept.get("call")))
    if (not isinstance(tensors, list) or not all(isinstance(t, torch.Tensor) for t in tensors)
            or not isinstance(call, dict) or set(call) != CALL_KEYS):
        raise ValueError("not a kept op (its call or tensors)")
    if (not isinstance(call["op"], str) or type(call["step"]) is not int
            or type(call["index"]) is not int or not isinstance(call["recorded_outputs"], list)
            or not isinstance(call["switches"], dict) or set(call["switches"]) != SWITCH_KEYS
            or type(call["switches"]["threads"]) is not int):
        raise ValueError("not a kept op (its op, step, index, switches or outputs)")
    return call, tensors

