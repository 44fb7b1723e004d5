"""A run's trace in the tool's format (docs/trace-format.md), as `repro-audit compare` reads it:
one header record, one init record, a record per step and per epoch, and an end record, written
whole or not at all. The records obey the reader's consistency rules (each epoch's mean loss is
the mean of its steps' float32 losses summed in double, in order; the end record's median step
time is the median of the steps'; its final loss and weights are the last step's)."""
import json
import os
import struct

FORMAT_VERSION = 1
FORMAT_VERSION_WITH_OPS = 2  # the run recorded op records (ops.py)


def loss_bits(value):
    """The IEEE-754 bits of a loss as float32, as "0x3f800000"."""
    (bits,) = struct.unpack("<I", struct.pack("<f", float(value)))
    return "0x%08x" % bits


def float32_value(bits):
    """The float32 of "0x..." bits, as a Python float (exact)."""
    return struct.unpack("<f", struct.pack("<I", int(bits, 16)))[0]


def canonical_json(value):
    """JSON as the C++ tool dumps it (nlohmann::json::dump): compact, keys sorted, UTF-8 kept."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


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

    def __init__(self, header, initial_weights):
        self.header = header
        self.initial_weights = list(initial_weights)
        self.steps = []
        self.epochs = []
        self._epoch_steps = 0
        self._epoch_loss_sum = 0.0
        self._epoch_seconds = 0.0

    def add_step(self, record):
        epoch = record["epoch"]
        if self.steps and epoch != self.steps[-1]["epoch"]:
            self.close_epoch()
        record["record"] = "step"
        self.steps.append(record)
        self._epoch_steps += 1
        self._epoch_loss_sum += float32_value(record["loss_bits"])  # in double, in order
        self._epoch_seconds += record["seconds"]

    def close_epoch(self):
        """The epoch record of the steps since the last one (none when there are none)."""
        if self._epoch_steps == 0:
            return
        epoch = self.steps[-1]["epoch"]
        self.epochs.append({"record": "epoch", "epoch": epoch, "steps": self._epoch_steps,
                            "train_loss": self._epoch_loss_sum / self._epoch_steps,
                            "eval_loss": None, "eval_accuracy": None,
                            "seconds": self._epoch_seconds})
        self._epoch_steps, self._epoch_loss_sum, self._epoch_seconds = 0, 0.0, 0.0

    def end_record(self, total_seconds, recording_seconds, loader_workers=None):
        self.close_epoch()
        last = self.steps[-1] if self.steps else None
        bits = last["loss_bits"] if last else "0x00000000"
        return {"record": "end", "steps": len(self.steps), "final_loss_bits": bits,
                "final_loss": float32_value(bits), "eval_loss": None, "eval_accuracy": None,
                "median_step_seconds": median([s["seconds"] for s in self.steps]),
                "total_seconds": total_seconds, "recording_seconds": recording_seconds,
                "weights": list(last["weights"] if last else self.initial_weights),
                **({"loader_workers": loader_workers} if loader_workers else {})}

    def lines(self, total_seconds, recording_seconds, loader_workers=None):
        end = self.end_record(total_seconds, recording_seconds, loader_workers)
        out = [canonical_json(self.header), canonical_json(
            {"record": "init", "weights": self.initial_weights})]
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
    then renamed over the name (a reader never sees half a trace)."""
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
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
