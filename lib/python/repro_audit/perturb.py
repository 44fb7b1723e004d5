"""The perturbed group and prediction churn of an audit (`repro-audit exec --seeds all`,
docs/statistics.md), kept out of recorder.py, which only calls in here.

The perturbed group: REPRO_AUDIT_PERTURB holds a draw (the run's number; settings.py reads it). Once the model is built
and before its initial weights are digested, the recorder flips the lowest mantissa bit of one
float32 parameter element, picked by that draw of the named stream "perturb/weight" (a keyed
SHA-256 of the seed, the stream's name and the draw: no RNG of the script moves), and writes which
in the trace header's "perturbation". The script's own seed makes everything else the same-seed
runs'; the comparison reports the flipped weight as the group's first divergence, by design.

Prediction churn: `rec.eval(predictions=...)` keeps the predicted class of every evaluation sample
(the last call's); the end of the run writes them, int64, to predictions.npy in the run's folder
(the trace's name without .trace.jsonl) and their digest into the end record, which the tool checks
before it computes the disagreement between runs.
"""
from typing import Any
import hashlib
import math
import os
import struct

from . import digest as digests

ENVIRONMENT = "REPRO_AUDIT_PERTURB"
STREAM = "perturb/weight"
TRACE_SUFFIX = ".trace.jsonl"
PREDICTIONS_FILE = "predictions.npy"


def wanted(seed_group: Any, draw: Any) -> Any:
    """Whether the run flips a weight: exactly the perturbed group's runs, which need a draw
    (ValueError otherwise: the tool refuses a perturbed trace without its perturbation)."""
    if (seed_group == "perturbed") != (draw is not None):
        raise ValueError(f"repro_audit: seed group {seed_group!r} with "
                         f"{ENVIRONMENT}={'' if draw is None else draw!r}: the perturbed group, "
                         "and only it, flips a weight")
    return draw is not None


PLANNED = "REPRO_AUDIT_PERTURB_PLANNED"


def check_perturbable(torch: Any, params: Any, planned: Any) -> None:
    """In every run of an audit with a perturbed group (`planned`: REPRO_AUDIT_PERTURB_PLANNED=1,
    settings.py): a model with no contiguous float32 parameter element cannot be perturbed, and
    fails now, in the audit's first run, not after the same-seed and different-seed groups have
    trained."""
    if not planned:
        return
    if any(p.dtype == torch.float32 and p.is_contiguous() and p.numel() > 0 for _, p in params):
        return
    dtypes = sorted({str(p.dtype).replace("torch.", "") for _, p in params}) or ["none"]
    raise ValueError("repro_audit: --seeds all flips one bit of a float32 weight, and this model "
                     f"has none (its parameters: {', '.join(dtypes)}): audit it with --seeds "
                     "both, or keep a float32 copy of the model for the audit")


def choose(sizes: Any, seed: Any, draw: Any) -> Any:
    """(parameter position, element) that draw `draw` picks among parameters of `sizes` elements:
    uniform over all their elements, from 64 bits of SHA-256("perturb/weight", seed, draw)."""
    total = sum(sizes)
    if total == 0:
        raise ValueError("repro_audit: the model has no float32 parameter element to perturb")
    key = f"{STREAM}\0{seed}\0{draw}".encode()
    index = int.from_bytes(hashlib.sha256(key).digest()[:8], "little") % total
    for position, size in enumerate(sizes):
        if index < size:
            return position, index
        index -= size
    raise AssertionError("unreachable")


def flip_one_weight(torch: Any, params: Any, seed: Any, draw: Any) -> Any:
    """Flips bit 0 of the element `choose` picks among the contiguous float32 parameters of
    `params` ((name, tensor) in trace order); returns the header's "perturbation" record."""
    candidates = [(n, p) for n, p in params if p.dtype == torch.float32 and p.is_contiguous()]
    position, element = choose([p.numel() for _, p in candidates], seed, draw)
    name, param = candidates[position]
    with torch.no_grad():
        flat = param.data.view(-1)
        before = struct.unpack("<I", struct.pack("<f", flat[element].item()))[0]
        after = before ^ 1
        flat[element] = struct.unpack("<f", struct.pack("<I", after))[0]
    return {"tensor": name, "element": element, "bit": 0,
            "before_bits": "0x%08x" % before, "after_bits": "0x%08x" % after}


def _classes(predictions: Any) -> Any:
    """The predicted classes as a flat list of ints: a tensor (of class indices, or of scores
    [N, classes], whose arg-max is taken), a numpy array or a sequence."""
    if hasattr(predictions, "detach"):
        if predictions.dim() == 2:
            predictions = predictions.argmax(dim=1)
        return [int(v) for v in predictions.detach().to("cpu").reshape(-1).tolist()]
    return [int(v) for v in predictions]


class EvalRecord:
    """What rec.eval(...) gave, for the end record: the predictions (written at the end), the
    accuracy against `labels` when given, and the eval loss when given."""

    def __init__(self) -> None:
        self.classes: Any = None
        self.accuracy: Any = None
        self.loss: Any = None

    def eval(self, predictions: Any, labels: Any = None, loss: Any = None) -> None:
        self.classes = _classes(predictions)
        if labels is not None:
            truth = _classes(labels)
            if len(truth) != len(self.classes):
                raise ValueError(f"repro_audit: eval: {len(self.classes)} predictions and "
                                 f"{len(truth)} labels")
            right = sum(1 for p, t in zip(self.classes, truth) if p == t)
            self.accuracy = right / len(truth) if truth else None
        if loss is not None:
            self.loss = float(loss.item() if hasattr(loss, "item") else loss)

    def end_fields(self, trace_path: Any) -> Any:
        """The end record's eval fields; writes predictions.npy beside the trace (none for a trace
        not named *.trace.jsonl: nowhere to put it)."""
        fields: Any = {}
        if self.accuracy is not None:
            fields["eval_accuracy"] = self.accuracy
        if self.loss is not None and math.isfinite(self.loss):  # NaN: no JSON number
            fields["eval_loss"] = self.loss
        if self.classes is None or not trace_path.endswith(TRACE_SUFFIX) or \
                len(os.path.basename(trace_path)) == len(TRACE_SUFFIX):
            return fields
        folder = trace_path[:-len(TRACE_SUFFIX)]
        os.makedirs(folder, exist_ok=True)
        data = struct.pack("<%dq" % len(self.classes), *self.classes)
        _write_npy(os.path.join(folder, PREDICTIONS_FILE), data, len(self.classes))
        fields["predictions"] = {
            "file": os.path.basename(folder) + "/" + PREDICTIONS_FILE,
            "samples": len(self.classes),
            "digest": digests.digest_bytes(digests.I64, (len(self.classes),), data)}
        return fields


def _write_npy(path: Any, data: Any, count: Any) -> None:
    """An int64 vector as np.save writes it (the tool's reader, lib/formats/npy.h, reads it),
    renamed into place."""
    import numpy

    temporary = path + ".tmp-%d" % os.getpid()
    with open(temporary, "wb") as out:
        numpy.save(out, numpy.frombuffer(data, dtype="<i8", count=count))
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)
