"""A run's trace in the tool's format (docs/trace-format.md), as `repro-audit compare` reads it:
one header record, one init record, a record per step and per epoch, and an end record, each
written when it is made, the file under the trace's name only when the run ends. The records obey the reader's consistency rules (each epoch's mean loss is
the mean of its steps' float32 losses summed in double, in order; the end record's median step
time is the median of the steps'; its final loss, weights and buffers are the last step's). A loss
that is not finite is written as null beside its bits, as the format says: JSON has no NaN.

The recorder writes version 3: the end record says how the run ended (`status` "completed", or
"failed" with the exception's type in `error`), parameters and buffers carry their dtype and may
be 0-dim or empty, buffers are recorded; op records (op_records.py) when the header has
`trace_ops`. Readers of versions 1 and 2 only refuse it by its version, so none takes a failed run for whole.
With a level of detail (detail.py: REPRO_AUDIT_TENSOR_DIGESTS), version 4: the header's
`tensor_digests` names the steps recorded per tensor, the others hold one digest per category.
"""
from typing import Any, Dict
import array
import json
import math
import os
import stat
import struct

from . import detail
from . import digest as digests

FORMAT_VERSION = 3
COMPLETED, FAILED = "completed", "failed"


def loss_bits(value: Any) -> Any:
    """The IEEE-754 bits of a loss as float32, as "0x3f800000"."""
    (bits,) = struct.unpack("<I", struct.pack("<f", float(value)))
    return "0x%08x" % bits


def float32_value(bits: Any) -> Any:
    """The float32 of "0x..." bits, as a Python float (exact)."""
    return struct.unpack("<f", struct.pack("<I", int(bits, 16)))[0]


def finite_or_none(value: Any) -> Any:
    """`value`, or None when it is not finite (the trace's null beside exact bits)."""
    return value if math.isfinite(value) else None


def canonical_json(value: Any) -> Any:
    """JSON as the C++ tool dumps it (nlohmann::json::dump): compact, keys sorted, UTF-8 kept. A
    NaN or an infinity is an error (JSON has none: the records write null)."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False,
                      allow_nan=False)


def median(values: Any) -> Any:
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
    """The records of one run, each written when it is made (docs/trace-format.md, "Streamed
    traces"): to a temporary beside the trace, "<path>.tmp-<pid>-<n>", opened at the first
    record and renamed over the trace when the run ends (finish). The cost of a step and the
    memory held do not grow with the run's length: what the end record repeats is kept (the last
    step's loss and digests, every step's time for the median). A run killed on the way leaves
    the temporary: its records up to the last one written, without an end record, which
    `repro-audit` names as an interrupted run's partial trace. Without a path (tests), the lines
    are kept in memory (text())."""

    def __init__(self, header: Any, initial_weights: Any, initial_buffers: Any = (),
                 path: Any = None) -> None:
        self.header = header
        self.initial_weights = list(initial_weights)
        self.initial_buffers = list(initial_buffers)
        self.step_count = 0
        self.epoch = 0  # the open epoch: the last step's, 0 before any
        self._epochs_written = 0
        self._last: Any = None  # the last step's record
        # The last step's per-tensor digests (the end record's), whatever its level of detail.
        self._last_weights: Any = None
        self._last_buffers: Any = None
        detail_plan = header.get("tensor_digests")
        self._plan = detail.TensorDigestPlan.from_header(detail_plan) if detail_plan else None
        self._seconds = array.array("d")  # 8 bytes a step: the end record's median
        self._epoch_steps = 0
        self._epoch_loss_sum = 0.0
        self._epoch_seconds = 0.0
        self._path = path
        self._out: Any = None  # the temporary's file object, or a list of lines without a path
        self._temporary: Any = None
        self._header_line: Any = None
        self.end_fields: Any = {}  # what the end record adds: rec.eval's predictions and accuracy

    def check_epoch(self, epoch: Any) -> None:
        """ValueError for a step of an epoch before the open one: the trace's epochs only go
        forward (a skipped epoch is written as an epoch of no steps)."""
        if epoch < self.epoch:
            raise ValueError(f"repro_audit: step {self.step_count} is in epoch {epoch}, after a "
                             f"step of epoch {self.epoch}: epochs only go forward")

    def _write(self, record: Any) -> None:
        if self._out is None:
            self._start()
        line = canonical_json(record) + "\n"
        out: Any = self._out  # (started above: never None here)
        if isinstance(out, list):
            out.append(line)
        else:
            out.write(line)

    def _start(self) -> None:
        """The header and init records, first in the file (the temporary's, or the memory's)."""
        self._header_line = canonical_json(self.header) + "\n"
        init = canonical_json({"record": "init", "weights": self.initial_weights,
                               "buffers": self.initial_buffers}) + "\n"
        if self._path is None:
            self._out = [self._header_line, init]
            return
        check_replaceable(self._path)
        fd, self._temporary = _create_temporary(self._path)
        self._out = os.fdopen(fd, "w", encoding="utf-8")
        self._out.write(self._header_line)
        self._out.write(init)

    def add_step(self, record: Any) -> None:
        epoch = record["epoch"]
        self.check_epoch(epoch)
        if self.step_count and epoch != self.epoch:
            self.close_epoch()
        for skipped in range(self._epochs_written, epoch):  # epochs without a step: empty records
            self._write_epoch(skipped, 0, 0.0, 0.0)
        record["record"] = "step"
        self._last_weights, self._last_buffers = record["weights"], record["buffers"]
        if self._plan is not None and not self._plan.at(record["step"]):
            detail.per_category(record, digests.digest_of_digests)
        self._write(record)
        self.epoch = epoch
        self.step_count += 1
        self._last = record
        self._seconds.append(record["seconds"])
        self._epoch_steps += 1
        self._epoch_loss_sum += float32_value(record["loss_bits"])  # in double, in order
        self._epoch_seconds += record["seconds"]

    def close_epoch(self) -> None:
        """The epoch record of the steps since the last one (none when there are none); the file
        flushed, so that a killed run's trace holds every whole epoch."""
        if self._epoch_steps == 0:
            return
        self._write_epoch(self.epoch, self._epoch_steps, self._epoch_loss_sum / self._epoch_steps,
                          self._epoch_seconds)
        self._epoch_steps, self._epoch_loss_sum, self._epoch_seconds = 0, 0.0, 0.0
        if not isinstance(self._out, list):
            self._out.flush()

    def _write_epoch(self, epoch: Any, steps: Any, mean_loss: Any, seconds: Any) -> None:
        self._write({"record": "epoch", "epoch": epoch, "steps": steps,
                     "train_loss": finite_or_none(mean_loss),
                     # rec.eval's, set before the last epoch closes: the end record repeats them
                     "eval_loss": self.end_fields.get("eval_loss"),
                     "eval_accuracy": self.end_fields.get("eval_accuracy"), "seconds": seconds})
        self._epochs_written = epoch + 1

    def end_record(self, total_seconds: Any, recording_seconds: Any, loader_workers: Any = None,
                   error: Any = None) -> Any:
        """The end record; `error`: the type of the exception that ended the run (a failed run,
        whose trace is never compared as whole), None for a run that completed."""
        last = self._last
        bits = last["loss_bits"] if last else "0x00000000"
        end = {"record": "end", "steps": self.step_count, "final_loss_bits": bits,
               "final_loss": finite_or_none(float32_value(bits)), "eval_loss": None,
               "eval_accuracy": None, "median_step_seconds": median(self._seconds),
               "total_seconds": total_seconds, "recording_seconds": recording_seconds,
               "weights": list(self._last_weights if last else self.initial_weights),
               "buffers": list(self._last_buffers if last else self.initial_buffers),
               "status": FAILED if error else COMPLETED,
               **({"loader_workers": loader_workers} if loader_workers else {})}
        if error:
            end["error"] = error
        # rec.eval's (perturb.py); its accuracy and loss only with an epoch record to repeat
        end.update({k: v for k, v in self.end_fields.items()
                    if self.step_count or not k.startswith("eval_")})
        return end

    def finish(self, total_seconds: Any, recording_seconds: Any, loader_workers: Any = None,
               error: Any = None) -> None:
        """The end record, then the trace under its name (fsync, rename). A header that changed
        since it was written (the cuDNN ledger, known at the end) is written anew in front of
        the records: one sequential copy."""
        self.close_epoch()
        self._write(self.end_record(total_seconds, recording_seconds, loader_workers, error))
        if isinstance(self._out, list):
            self._out[0] = canonical_json(self.header) + "\n"
            return
        out, self._out = self._out, None
        header_line = canonical_json(self.header) + "\n"
        try:
            if header_line != self._header_line:
                out.close()
                _rewrite_header(self._path, self._temporary, len(self._header_line.encode()),
                                header_line)
                return
            out.flush()
            os.fsync(out.fileno())
            out.close()
            check_replaceable(self._path)
            os.replace(self._temporary, self._path)
        except BaseException:
            out.close()
            if os.path.exists(self._temporary):
                os.unlink(self._temporary)
            raise

    def suspend(self, parked: str) -> Dict[str, Any]:
        """The state a new process needs to go on writing this trace (checkpoint.py: an
        interrupted run), as JSON values; the temporary flushed, synced and renamed to `parked`
        (a name the next process derives as well: no path is in the state, which lies in a
        folder others may write), left open for the process's end."""
        if self._out is None:
            self._start()
        out: Any = self._out
        if not isinstance(out, list):
            out.flush()
            os.fsync(out.fileno())
            check_replaceable(parked)
            os.replace(self._temporary, parked)
            self._temporary = parked
        return {"header": self.header, "header_line": self._header_line,
                "initial_weights": self.initial_weights, "initial_buffers": self.initial_buffers,
                "step_count": self.step_count, "epoch": self.epoch,
                "epochs_written": self._epochs_written, "last": self._last,
                "last_weights": self._last_weights, "last_buffers": self._last_buffers,
                "seconds": list(self._seconds), "epoch_steps": self._epoch_steps,
                "epoch_loss_sum": self._epoch_loss_sum, "epoch_seconds": self._epoch_seconds}

    @classmethod
    def resumed(cls, state: Dict[str, Any], path: str, parked: str) -> "TraceRecords":
        """The records of a suspended trace (suspend()), appended to `parked`, its temporary:
        opened without following a link, and only when it is a regular file with one name."""
        records = cls(state["header"], state["initial_weights"], state["initial_buffers"], path)
        records.step_count, records.epoch = state["step_count"], state["epoch"]
        records._epochs_written, records._last = state["epochs_written"], state["last"]
        records._last_weights = state["last_weights"]
        records._last_buffers = state["last_buffers"]
        records._seconds = array.array("d", state["seconds"])
        records._epoch_steps = state["epoch_steps"]
        records._epoch_loss_sum = state["epoch_loss_sum"]
        records._epoch_seconds = state["epoch_seconds"]
        records._header_line, records._temporary = state["header_line"], parked
        records._out = _open_to_append(parked)
        return records

    def add_resume(self, record: Any, epoch: Any) -> None:
        """A resume record (checkpoint.py) before the step of `epoch` it describes: after the
        epoch record that step closes, as the reader expects."""
        self.check_epoch(epoch)
        if self.step_count and epoch != self.epoch:
            self.close_epoch()
        self._write(record)

    def text(self) -> Any:
        """The lines so far, without a path (tests)."""
        return "".join(self._out or [])


def _create_temporary(path: Any) -> Any:
    """A new file "<path>.tmp-<pid>-<n>" (as the C++ tool names its temporaries, which an audit
    folder knows as a writer's): (descriptor, name)."""
    for n in range(1000):
        temporary = "%s.tmp-%d-%d" % (path, os.getpid(), n)
        try:
            return os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), temporary
        except FileExistsError:
            continue
    raise OSError(f"repro_audit: no free temporary name beside {path}")


def _open_to_append(path: str) -> Any:
    """`path` opened to append, never through a link; OSError unless it is a regular file of one
    name (a hard link would send the records to another file too)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        os.close(fd)
        raise OSError(f"repro_audit: {path} is not the regular file the interrupted run left")
    return os.fdopen(fd, "a", encoding="utf-8")


def _rewrite_header(path: Any, temporary: Any, old_header_bytes: Any, header_line: Any) -> None:
    """The records of `temporary` after its first line, behind `header_line`, renamed over
    `path`; the old temporary removed."""
    def write(out: Any) -> None:
        out.write(header_line.encode("utf-8"))
        with open(temporary, "rb") as records:
            records.seek(old_header_bytes)
            while True:
                chunk = records.read(1 << 20)
                if not chunk:
                    break
                out.write(chunk)

    _write_renamed(path, write, binary=True)
    os.unlink(temporary)


def _write_renamed(path: Any, write: Any, binary: Any) -> None:
    """Calls write(file) on a new temporary beside `path`, fsyncs it and renames it over `path`
    (a regular file or nothing); the temporary is removed on any failure."""
    check_replaceable(path)
    fd, temporary = _create_temporary(path)
    try:
        options: Dict[str, Any] = {} if binary else {"encoding": "utf-8"}
        with os.fdopen(fd, "wb" if binary else "w", **options) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        check_replaceable(path)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def write_whole(path: Any, text: Any) -> None:
    """Writes `text` (a str, or bytes) to `path` whole or not at all: a temporary named as the C++ tool names its own
    ("<path>.tmp-<pid>-<n>", which an audit folder knows as debris of a killed writer), fsynced,
    then renamed over the name (a reader never sees half a trace): only over a regular file or no
    file (OSError otherwise: a device node, a FIFO or a link under the name is left alone)."""
    _write_renamed(path, lambda f: f.write(text), binary=isinstance(text, (bytes, bytearray)))


def check_replaceable(path: Any) -> None:
    """OSError unless `path` is a regular file or nothing (what write_whole may rename over)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(info.st_mode):
        raise OSError(f"repro_audit: {path} is not a regular file: not replaced by a trace")
