"""One op kept whole for a magnitude and a replay (docs/pytorch.md, "The root-cause op's
magnitude"): `repro-audit exec --keep-op STEP:INDEX` (REPRO_AUDIT_KEEP_OP) asks each run to keep
the INDEX-th op record of step STEP, whatever the budget of kept outputs: its outputs go to
kept-outputs.bin (compare's magnitude: count, max ULP, max |difference|), and the call itself,
its inputs as they were before it ran, its non-tensor arguments and the switches that choose
kernels, to kept-op.pt in the run's folder. At the run's end the op is replayed there in a fresh
process (replay.py): how many distinct outputs it gives in K replays tells a nondeterministic
kernel (more than one) from a setting that differs between runs (one, the run's own)."""
import os

from .trace import write_whole

ENVIRONMENT = "REPRO_AUDIT_KEEP_OP"
REPLAYS_ENVIRONMENT = "REPRO_AUDIT_REPLAYS"
DEFAULT_REPLAYS = 10
FILE_NAME = "kept-op.pt"
REPLAY_FILE_NAME = "replay.json"


def parse(text):
    """(step, index) of "STEP:INDEX"; ValueError naming the variable otherwise."""
    step, colon, index = text.strip().partition(":")
    if not colon or not step.isdigit() or not index.isdigit() or len(step) > 18 or len(index) > 18:
        raise ValueError(f"repro_audit: {ENVIRONMENT}={text!r}: expected STEP:INDEX, two "
                         "non-negative integers (the root cause's step and op index)")
    return int(step), int(index)


def replays_from(environ):
    text = environ.get(REPLAYS_ENVIRONMENT, str(DEFAULT_REPLAYS)).strip()
    if not text.isdigit() or not 1 <= int(text) <= 1000:
        raise ValueError(f"repro_audit: {REPLAYS_ENVIRONMENT}={text!r}: expected an integer "
                         "from 1 to 1000")
    return int(text)


def switches(torch):
    """The settings that choose which kernel an op runs, as the run had them."""
    return {
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
        "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
        "cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32),
        "matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "threads": torch.get_num_threads(),
    }


def apply_switches(torch, values):
    torch.use_deterministic_algorithms(values["deterministic_algorithms"])
    torch.backends.cudnn.benchmark = values["cudnn_benchmark"]
    torch.backends.cudnn.deterministic = values["cudnn_deterministic"]
    torch.backends.cudnn.allow_tf32 = values["cudnn_allow_tf32"]
    torch.backends.cuda.matmul.allow_tf32 = values["matmul_allow_tf32"]
    torch.set_num_threads(values["threads"])


def map_tensors(value, function, is_tensor):
    """`value` with every tensor in it (in lists, tuples and dicts too) replaced by
    function(tensor); is_tensor says what counts as one (a torch.Tensor here, a kept tensor's
    dict in replay.py)."""
    if is_tensor(value):
        return function(value)
    if isinstance(value, (list, tuple)):
        copied = [map_tensors(v, function, is_tensor) for v in value]
        return copied if isinstance(value, list) else tuple(copied)
    if isinstance(value, dict):
        return {k: map_tensors(v, function, is_tensor) for k, v in value.items()}
    return value


def _to_host(torch, value):
    """Arguments with every tensor as a host copy and its device beside it."""
    return map_tensors(value, lambda t: {"__tensor__": t.detach().to("cpu", copy=True),
                                         "device": str(t.device), "requires_grad": False},
                       lambda v: isinstance(v, torch.Tensor))


def capture(torch, func, args, kwargs, step, index):
    """What a replay needs of a call, taken before it runs (an in-place op changes its inputs)."""
    return {"op": str(func), "step": step, "index": index, "args": _to_host(torch, list(args)),
            "kwargs": _to_host(torch, dict(kwargs)), "switches": switches(torch),
            "torch": torch.__version__}


def save(torch, captured, recorded_outputs, folder):
    """kept-op.pt in the run's folder, written whole; its path."""
    import io
    captured = dict(captured, recorded_outputs=recorded_outputs)
    buffer = io.BytesIO()
    torch.save(captured, buffer)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, FILE_NAME)
    write_whole(path, buffer.getvalue())
    return path
