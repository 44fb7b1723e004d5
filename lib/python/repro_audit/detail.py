"""The trace's level of detail (docs/trace-format.md, "Levels of detail"): the steps that record a
digest per tensor (every gradient, weight and buffer); the others record one digest per category,
`grads_digest`, `weights_digest`, `buffers_digest` (the digest of the per-tensor hex digests
joined by newlines, as the optimizer state's). A trace with a level of detail is format version 4.

REPRO_AUDIT_TENSOR_DIGESTS (read in settings.py) holds the plan as `repro-audit exec --tensor-digests` writes it:
comma-separated values, each "all", "none", "every:K" (steps 0, K, 2K, ...) or a step window
"A:B" (steps A..B-1), "A:" (A to the end) or "N" (step N alone). Unset or "all": every step.
"""
from typing import Any
import re

ENVIRONMENT = "REPRO_AUDIT_TENSOR_DIGESTS"
FORMAT_VERSION = 4


class TensorDigestPlan:
    """Which steps record a digest per tensor: every `every`-th and each window's."""

    def __init__(self, every: Any = None, windows: Any = ()) -> None:
        self.every = every
        self.windows = list(windows)  # (first, last or None)

    @classmethod
    def parse(cls, text: Any, name: Any = ENVIRONMENT) -> Any:
        """The plan of `text`; ValueError naming `name` and the value that is malformed."""
        every, windows, seen = None, [], set()
        for value in text.split(","):
            if value in ("all", "none"):
                seen.add(value)
                continue
            match = re.fullmatch(r"every:([0-9]+)", value)
            if match:
                k = int(match.group(1))
                if k < 1 or (every is not None and every != k):
                    raise ValueError(f"repro_audit: {name}={text!r}: {value!r} needs one period "
                                     "K >= 1")
                every = k
                seen.add("every")
                continue
            match = re.fullmatch(r"([0-9]+)(?::([0-9]*))?", value)
            if not match:
                raise ValueError(f"repro_audit: {name}={text!r}: {value!r} is not a level of "
                                 "detail (all, none, every:K, or a step window A:B, A: or N)")
            first = int(match.group(1))
            last = (first + 1 if match.group(2) is None
                    else int(match.group(2)) if match.group(2) else None)
            if last is not None and last <= first:
                raise ValueError(f"repro_audit: {name}={text!r}: the window {value!r} holds no "
                                 "step")
            windows.append((first, last))
            seen.add("window")
        if "none" in seen and len(seen) > 1:
            raise ValueError(f"repro_audit: {name}={text!r}: none excludes every other value")
        if "all" in seen:
            return cls(1)
        return cls(every, windows)

    def all(self) -> Any:
        """Every step per tensor: a plan of versions 1 to 3."""
        return self.every == 1 or any(first == 0 and last is None
                                      for first, last in self.windows)

    def at(self, step: Any) -> Any:
        if self.every is not None and step % self.every == 0:
            return True
        return any(first <= step and (last is None or step < last)
                   for first, last in self.windows)

    def header(self) -> Any:
        """The header's `tensor_digests`."""
        return {"every": self.every,
                "windows": [{"first": first, "last": last} for first, last in self.windows]}

    @classmethod
    def from_header(cls, value: Any) -> Any:
        return cls(value["every"], [(w["first"], w["last"]) for w in value["windows"]])


def per_category(record: Any, digest_of_digests: Any) -> Any:
    """`record` (a step's) with one digest per category in place of its per-tensor lists."""
    for tensors, combined in (("grads", "grads_digest"), ("weights", "weights_digest"),
                              ("buffers", "buffers_digest")):
        record[combined] = digest_of_digests(record.pop(tensors))
    return record
