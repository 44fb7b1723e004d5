"""repro_audit: record a PyTorch training run in repro-audit's trace format (docs/pytorch.md)."""
from .checkpoint import Checkpoint
from .digest import digest_bytes, tensor_digest, text_digest
from .recorder import NoOpRecorder, Recorder, VERSION, record, seed_everything
from .workers import worker_init_fn

if __import__("os").environ.get("REPRO_AUDIT_TRACE"):
    # Under an audit only: a DDP communication hook the script registers is wrapped, so that the
    # recorder sees its buckets (collective.py).
    from . import collective as _collective
    _collective.watch_registrations()

__all__ = ["record", "Checkpoint", "Recorder", "NoOpRecorder", "seed_everything", "digest_bytes",
           "tensor_digest", "text_digest", "worker_init_fn", "VERSION"]
__version__ = VERSION
