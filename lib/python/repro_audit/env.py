"""The audit's environment variables (docs/pytorch.md "Running it"), each read with one check that
names it: a value the C++ reader would refuse in a trace is refused here, when the recorder is
made, before the training, never written.

    REPRO_AUDIT_TRACE       the trace file: a regular file or no file yet, in an existing folder
    REPRO_AUDIT_RUN         the run's number, an integer in [0, 2^31)
    REPRO_AUDIT_SEED        the run's seed, an integer in [0, 2^64)
    REPRO_AUDIT_SEED_GROUP  "same", "different" or "perturbed"
    REPRO_AUDIT_PERTURB     the perturbed group's draw (perturb.py)
    REPRO_AUDIT_PERTURB_PLANNED  1: the audit has a perturbed group (perturb.py)
    REPRO_AUDIT_ID          the audit's id, 32 lowercase hex digits
    REPRO_AUDIT_KEEP_BYTES  the budget of kept outputs, an integer in [0, 2^30] (1 GiB)
    REPRO_AUDIT_TRACE_OPS   the op window (ops.parse_window)
    REPRO_AUDIT_TENSOR_DIGESTS  the level of detail (detail.TensorDigestPlan)
"""
import os
import re
import stat

SEED_LIMIT = 1 << 64  # seeds are unsigned 64-bit integers (the trace's seeds.init)
RUN_LIMIT = 1 << 31  # a run number is an int in the reader
KEEP_BYTES_MAX = 1 << 30  # kept-outputs.bin stays under the reader's 2 GiB cap


def integer(name, low, limit, default=None, environ=None):
    """The integer value of variable `name`, in [low, limit), or `default` when it is unset;
    ValueError naming the variable otherwise (digits only: "-1", "1e3", " 7" and "0x10" are not
    integers here, as in the C++ tool's options)."""
    text = (os.environ if environ is None else environ).get(name)
    if text is None:
        return default
    if not re.fullmatch(r"[0-9]+", text) or not low <= int(text) < limit:
        raise ValueError(f"repro_audit: {name}={text!r}: expected an integer in "
                         f"[{low}, {limit - 1}]")
    return int(text)


def seed(environ=None):
    """REPRO_AUDIT_SEED, or None."""
    return integer("REPRO_AUDIT_SEED", 0, SEED_LIMIT, environ=environ)


def run_index(environ=None):
    return integer("REPRO_AUDIT_RUN", 0, RUN_LIMIT, default=0, environ=environ)


def keep_bytes(default, environ=None):
    return integer("REPRO_AUDIT_KEEP_BYTES", 0, KEEP_BYTES_MAX + 1, default=default,
                   environ=environ)


def seed_group(environ=None):
    text = (os.environ if environ is None else environ).get("REPRO_AUDIT_SEED_GROUP", "same")
    if text not in ("same", "different", "perturbed"):
        raise ValueError(f"repro_audit: REPRO_AUDIT_SEED_GROUP={text!r}: expected same, "
                         "different or perturbed")
    return text


def audit_id(environ=None):
    """REPRO_AUDIT_ID, or None when unset or empty."""
    text = (os.environ if environ is None else environ).get("REPRO_AUDIT_ID")
    if not text:
        return None
    if not re.fullmatch(r"[0-9a-f]{32}", text):
        raise ValueError(f"repro_audit: REPRO_AUDIT_ID={text!r}: expected 32 lowercase hex "
                         "digits")
    return text


def check_trace_path(path, variable="REPRO_AUDIT_TRACE"):
    """ValueError unless `path` can become a trace: its folder exists and the name is a regular
    file or nothing yet. The trace is renamed over the name when the run ends; a device node, a
    FIFO, a folder or a symbolic link there is never replaced."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValueError(f"repro_audit: {variable}={path!r}: the folder {folder!r} does not exist")
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(info.st_mode):
        kind = ("a symbolic link" if stat.S_ISLNK(info.st_mode) else
                "a folder" if stat.S_ISDIR(info.st_mode) else "a device, FIFO or socket")
        raise ValueError(f"repro_audit: {variable}={path!r} is {kind}, not a trace file: the "
                         "recorder writes a trace only over a regular file")
