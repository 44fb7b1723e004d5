"""Misuse of the recorder that would make a trace lie without an error (docs/pytorch.md,
"Misuse the recorder catches"). Each is a warning, in the trace (the header's
`recorder_warnings`, which the report prints) and as a Python warning when it happens:

- `rec.step()` called before `optimizer.step()`: every weight is then recorded one update late.
  Seen at the first step: the weights are still the initial ones although gradients exist. (An
  optimizer that skips its first step, as torch.cuda.amp.GradScaler does on an overflow, looks
  the same; the warning says so.)
- `close()` / `finish()` a second time: a no-op.
"""
from typing import Any
import warnings

STEP_BEFORE_OPTIMIZER = (
    "rec.step() at step 0 found the weights unchanged since the start although gradients exist: "
    "is rec.step() called before optimizer.step()? Every weight is then recorded one update "
    "late; call rec.step() after optimizer.step() (an optimizer that skipped the step, as "
    "GradScaler does on an overflow, looks the same)")

SECOND_CLOSE = ("repro_audit: close() or finish() after the run ended (the end of the with "
                "block, or an earlier close()): nothing to do")


def grads_exist(params: Any) -> Any:
    """Whether any parameter has a gradient (`params`: (name, parameter) pairs)."""
    return any(p.grad is not None for _, p in params)


def step_before_optimizer(record: Any, initial_weights: Any, had_grads: Any) -> Any:
    """The warning for step 0 recorded before the optimizer stepped, or None. `record`: the step's
    record, its digests resolved."""
    if record["step"] != 0 or not had_grads or not initial_weights:
        return None
    return STEP_BEFORE_OPTIMIZER if list(record["weights"]) == list(initial_weights) else None


def warn(message: Any, depth: Any = 1) -> None:
    """The Python warning, pointing at the script's line: `depth` frames of the recorder between
    this call and the script's."""
    warnings.warn(message if message.startswith("repro_audit") else "repro_audit: " + message,
                  RuntimeWarning, stacklevel=2 + depth)
