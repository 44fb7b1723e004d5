"""repro_audit: record a PyTorch training run in repro-audit's trace format (docs/pytorch.md)."""
from typing import Any
from .checkpoint import Checkpoint
from .digest import digest_bytes, tensor_digest, text_digest
from .invariance_sweep import InvarianceResult, Padding, invariance
from .recorder import NoOpRecorder, Recorder, VERSION, record, seed_everything
from .settings import Settings, SettingsWarning
from .workers import worker_init_fn
from . import settings as _settings


def _is_the_launcher() -> Any:
    # `python3 -m repro_audit.launch` imports this package first: the launcher never records, and
    # importing torch there would cost every run of an audit a second or more before its ranks.
    argv = getattr(__import__("sys"), "orig_argv", [])  # Python 3.10+
    return "-mrepro_audit.launch" in argv or any(
        a == "-m" and b == "repro_audit.launch" for a, b in zip(argv, argv[1:]))


if _settings.trace_named() and not _is_the_launcher():
    # Under an audit only: a DDP communication hook the script registers is wrapped, so that the
    # recorder sees its buckets (collective.py).
    from . import collective as _collective
    _collective.watch_registrations()

__all__ = ["record", "Checkpoint", "Recorder", "NoOpRecorder", "seed_everything", "digest_bytes",
           "tensor_digest", "text_digest", "worker_init_fn", "invariance", "InvarianceResult",
           "Padding", "Settings", "SettingsWarning", "VERSION"]
__version__ = VERSION
