"""A run's trace in the tool's format (docs/trace-format.md), as `repro-audit compare` reads it:
one header record, one init record, a record per step and per epoch, and an end record, written
whole or not at all. The records obey the reader's consistency rules (each epoch's mean loss is
the mean of its steps' float32 losses summed in double, in order; the end record's median step
time is the median of the steps'; its final loss, weights and buffers are the last step's). A loss
that is not finite is written as null beside its bits, as the format says: JSON has no NaN.

The recorder writes version 3: the end record says how the run ended (`status` "completed", or
"failed" with the exception's type in `error`), parameters and buffers carry their dtype and may
be 0-dim or empty, buffers are recorded; op records (ops.py) when the header has `trace_ops`.
Readers of versions 1 and 2 only refuse it by its version, so none takes a failed run for whole.
"""
import json
import math
import os
import stat
import struct

FORMAT_VERSION = 3
COMPLETED, FAILED = "completed", "failed"


def loss_bits(value):
    """The IEEE-754 bits of a loss as float32, as "0x3f800000"."""
    (bits,) = struct.unpack("<I", struct.pack("<f", float(value)))
    return "0x%08x" % bits


def float32_value(bits):
    """The float32 of "0x..." bits, as a Python float (exact)."""
    return struct.unpack("<f", struct.pack("<I", int(bits, 16)))[0]


def finite_or_none(value):
    """`value`, or None when it is not finite (the trace's null beside exact bits)."""
    return value if math.isfinite(value) else None


def canonical_json(value):
    """JSON as the C++ tool dumps it (nlohmann::json::dump): compact, keys sorted, UTF-8 kept. A
    NaN or an infinity is an error (JSON has none: the records write null)."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False,
                      allow_nan=False)


def median(values):
    """The median as the tool computes it (lib/core/statistics.h): the mean of the two middle
    values for an even count."""
    if not values:
        return 0.0
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid] + ordered[mid - 1]) / 2.0


class TraceRecords:
    """The records of one run, kept until the run ends (a trace is written whole)."""

    def __init__(self, header, initial_weights, initial_buffers=()):
        self.header = header
        self.initial_weights = list(initial_weights)
        self.initial_buffers = list(initial_buffers)
        self.steps = []
        self.epochs = []
        self._epoch_steps = 0
        self._epoch_loss_sum = 0.0
        self._epoch_seconds = 0.0

    @property
    def epoch(self):
        """The open epoch: the last step's, 0 before any."""
        return self.steps[-1]["epoch"] if self.steps else 0

    def check_epoch(self, epoch):
        """ValueError for a step of an epoch before the open one: the trace's epochs only go
        forward (a skipped epoch is written as an epoch of no steps)."""
        if epoch < self.epoch:
            raise ValueError(f"repro_audit: step {len(self.steps)} is in epoch {epoch}, after a "
                             f"step of epoch {self.epoch}: epochs only go forward")

    def add_step(self, record):
        epoch = record["epoch"]
        self.check_epoch(epoch)
        if self.steps and epoch != self.steps[-1]["epoch"]:
            self.close_epoch()
        for skipped in range(len(self.epochs), epoch):  # epochs without a step: empty records
            self.epochs.append(self._epoch_record(skipped, 0, 0.0, 0.0))
        record["record"] = "step"
        self.steps.append(record)
        self._epoch_steps += 1
        self._epoch_loss_sum += float32_value(record["loss_bits"])  # in double, in order
        self._epoch_seconds += record["seconds"]

    def close_epoch(self):
        """The epoch record of the steps since the last one (none when there are none)."""
        if self._epoch_steps == 0:
            return
        self.epochs.append(self._epoch_record(self.steps[-1]["epoch"], self._epoch_steps,
                                              self._epoch_loss_sum / self._epoch_steps,
                                              self._epoch_seconds))
        self._epoch_steps, self._epoch_loss_sum, self._epoch_seconds = 0, 0.0, 0.0

    @staticmethod
    def _epoch_record(epoch, steps, mean_loss, seconds):
        return {"record": "epoch", "epoch": epoch, "steps": steps,
                "train_loss": finite_or_none(mean_loss), "eval_loss": None,
                "eval_accuracy": None, "seconds": seconds}

    def end_record(self, total_seconds, recording_seconds, loader_workers=None, error=None):
        """The end record; `error`: the type of the exception that ended the run (a failed run,
        whose trace is never compared as whole), None for a run that completed."""
        self.close_epoch()
        last = self.steps[-1] if self.steps else None
        bits = last["loss_bits"] if last else "0x00000000"
        end = {"record": "end", "steps": len(self.steps), "final_loss_bits": bits,
               "final_loss": finite_or_none(float32_value(bits)), "eval_loss": None,
               "eval_accuracy": None,
               "median_step_seconds": median([s["seconds"] for s in self.steps]),
               "total_seconds": total_seconds, "recording_seconds": recording_seconds,
               "weights": list(last["weights"] if last else self.initial_weights),
               "buffers": list(last["buffers"] if last else self.initial_buffers),
               "status": FAILED if error else COMPLETED,
               **({"loader_workers": loader_workers} if loader_workers else {})}
        if error:
            end["error"] = error
        return end

    def lines(self, total_seconds, recording_seconds, loader_workers=None, error=None):
        end = self.end_record(total_seconds, recording_seconds, loader_workers, error)
        out = [canonical_json(self.header), canonical_json(
            {"record": "init", "weights": self.initial_weights, "buffers": self.initial_buffers})]
        epochs = iter(self.epochs)
        pending = next(epochs, None)
        for step in self.steps:
            while pending is not None and pending["epoch"] < step["epoch"]:
                out.append(canonical_json(pending))
                pending = next(epochs, None)
            out.append(canonical_json(step))
        while pending is not None:
            out.append(canonical_json(pending))
            pending = next(epochs, None)
        out.append(canonical_json(end))
        return "\n".join(out) + "\n"


def write_whole(path, text):
    """Writes `text` (a str, or bytes) to `path` whole or not at all: a temporary named as the C++ tool names its own
    ("<path>.tmp-<pid>-<n>", which an audit folder knows as debris of a killed writer), fsynced,
    then renamed over the name (a reader never sees half a trace): only over a regular file or no
    file (OSError otherwise: a device node, a FIFO or a link under the name is left alone)."""
    check_replaceable(path)
    for n in range(1000):
        temporary = "%s.tmp-%d-%d" % (path, os.getpid(), n)
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:
            continue
    else:
        raise OSError(f"repro_audit: no free temporary name beside {path}")
    try:
        binary = isinstance(text, (bytes, bytearray))
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        check_replaceable(path)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def check_replaceable(path):
    """OSError unless `path` is a regular file or nothing (what write_whole may rename over)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(info.st_mode):
        raise OSError(f"repro_audit: {path} is not a regular file: not replaced by a trace")
