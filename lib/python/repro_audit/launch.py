"""Starts the ranks of a data-parallel script on this machine, as `torchrun --standalone
--nproc-per-node N` does, for the torch versions whose torchrun cannot start (Debian 12's torch
1.13 under Python 3.11: torchrun's `Std.from_str` returns None under 3.11's IntFlag and it fails
before any rank runs). docs/distributed.md, "Running it".

    python3 -m repro_audit.launch N script.py [args...]
    python3 -m repro_audit.launch --standalone --nproc-per-node N script.py [args...]

Each rank runs `<this python> -u script.py args...` with what torchrun sets: RANK, LOCAL_RANK,
WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR (127.0.0.1), MASTER_PORT (a free port), GROUP_RANK,
GROUP_WORLD_SIZE, ROLE_RANK, ROLE_WORLD_SIZE, ROLE_NAME, TORCHELASTIC_RESTART_COUNT,
TORCHELASTIC_MAX_RESTARTS, TORCHELASTIC_RUN_ID, and OMP_NUM_THREADS=1 when unset and N > 1.
The script runs as itself (its sys.argv[0]), so the recorder names the trace's spec after it, and
`repro-audit exec` names the audit after it (its first `.py` argument), never "launch".

It ends as torchrun does: when a rank fails, the others get SIGTERM (SIGKILL after
STOP_GRACE_S) and the launcher exits with the failing rank's status (128 + S for a rank killed by
signal S); SIGINT, SIGTERM and SIGHUP are passed on to the ranks, and once they have ended the
launcher ends by the same signal. But for exit status 75 (INTERRUPTED_EXIT), the recorder's
after an interrupt's save (`repro-audit exec --interrupt-at`, docs/resume.md): a rank that ends
with it stops no other; the launcher waits for every rank to reach its own save and exits 75
when they all did (torchrun stops the others and fails). A rank that ends 0 or fails meanwhile,
or one still running INTERRUPT_GRACE_S (--interrupt-grace) after the first interrupted rank
ended, fails the launch (exit 1, or the failing rank's status), saying which. On Linux each rank dies with the launcher (PR_SET_PDEATHSIG): a
`kill -9` of it, or of the `repro-audit exec` above it, leaves no rank training and writing into
the audit folder. Bad usage exits 2.

Standard library only, and nothing of the package is imported: the launcher never records.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from . import settings

PROG = "python3 -m repro_audit.launch"
MASTER_ADDR = "127.0.0.1"  # one node: the loopback, which no firewall or hostname setup breaks
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# How long a rank told to stop (SIGTERM, or the signal passed on) may take before SIGKILL: time
# for a script's own handler to save or flush, as torchrun gives (it waits 30 s); ranks blocked in
# a collective whose peer is gone never end by themselves, so the wait must be bounded.
STOP_GRACE_S = 10.0
POLL_S = 0.05  # the supervision loop's period: 20 wake-ups a second cost nothing next to training
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
# The recorder's exit status after an interrupt's save (checkpoint.py INTERRUPTED_EXIT; not
# imported: the launcher imports nothing of the package).
INTERRUPTED_EXIT = 75
# How long the other ranks may take to reach their save once one rank ended interrupted: they save
# at the same point of the same step, so seconds apart, but a large checkpoint written by every
# rank to one file system may take minutes; a rank that never gets there (it does not call
# rec.saved at the same point) must not keep the run waiting forever.
INTERRUPT_GRACE_S = 600.0


@dataclass
class Launch:
    """What the command line asks for."""

    nproc: int
    script: str
    script_args: list[str]
    master_addr: str
    master_port: Optional[int]
    interrupt_grace_s: float = INTERRUPT_GRACE_S


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, allow_abbrev=False,
        usage=f"{PROG} [options] N script.py [args...]\n"
              f"       {PROG} [options] --nproc-per-node N script.py [args...]",
        description="Start N ranks of a data-parallel PyTorch script on this machine, with the "
                    "environment torchrun sets (docs/distributed.md). For torch versions whose "
                    "torchrun cannot start; `torchrun --standalone --nproc-per-node N script.py` "
                    "reads the same with `python3 -m repro_audit.launch` for `torchrun`.",
        epilog="Exit status: 0 when every rank exits 0; 75 when every rank exits 75 (the "
               "recorder's after an interrupt's save: `repro-audit exec --interrupt-at`); else "
               "the first failing rank's (128 + S for a rank killed by signal S), 1 for ranks "
               "that did not all stop at the interrupt; 2 for bad usage; stopped by SIGINT, "
               "SIGTERM or SIGHUP, the same signal once the ranks have ended.")
    parser.add_argument("--nproc-per-node", "--nproc_per_node", dest="nproc", metavar="N",
                        help="the number of ranks (instead of the first positional N)")
    parser.add_argument("--standalone", action="store_true",
                        help="accepted as torchrun spells it: the ranks always run on this one "
                             "node, with a local rendezvous")
    parser.add_argument("--nnodes", metavar="1",
                        help="accepted as torchrun spells it, 1 (or 1:1) only")
    parser.add_argument("--master-addr", "--master_addr", dest="master_addr",
                        default=MASTER_ADDR, help=f"MASTER_ADDR (default {MASTER_ADDR})")
    parser.add_argument("--master-port", "--master_port", dest="master_port", metavar="PORT",
                        help="MASTER_PORT (default: a free port)")
    parser.add_argument("--interrupt-grace", dest="interrupt_grace", metavar="SECONDS",
                        help="once a rank exited 75 (interrupted), how long the others may take "
                             f"to exit 75 too (default {INTERRUPT_GRACE_S:g})")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="N script.py [args...]",
                        help="the number of ranks (unless --nproc-per-node gives it), the script, "
                             "and its arguments")
    return parser


def _positive(parser: argparse.ArgumentParser, what: str, text: str) -> int:
    # Digits only, as the C++ tool reads its integers: "-1", "2.0" and "0x2" are no rank counts.
    if not re.fullmatch(r"[0-9]+", text) or int(text) < 1:
        parser.error(f"{what}: {text!r} is not a positive integer")
    return int(text)


def parse(argv: Sequence[str]) -> Launch:
    """The launch the arguments ask for; argparse's exit 2 with a message on bad usage."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.nnodes is not None and args.nnodes not in ("1", "1:1"):
        parser.error(f"--nnodes {args.nnodes}: this launcher starts the ranks of one node only")
    command = list(args.command)
    if args.nproc is None:
        if not command:
            parser.error("missing N, the number of ranks, and the script")
        nproc = _positive(parser, "N (the number of ranks)", command.pop(0))
    else:
        nproc = _positive(parser, "--nproc-per-node", args.nproc)
    if not command:
        parser.error("missing the script the ranks run (N script.py [args...])")
    script = command[0]
    if not os.path.isfile(script):
        # Checked here: otherwise every rank would fail alike, N times over, after the start.
        parser.error(f"{script}: no such file (the script the ranks run)")
    port = None
    if args.master_port is not None:
        port = _positive(parser, "--master-port", args.master_port)
        if port > 65535:
            parser.error(f"--master-port: {port} is no TCP port")
    grace = INTERRUPT_GRACE_S
    if args.interrupt_grace is not None:
        try:
            grace = float(args.interrupt_grace)
        except ValueError:
            grace = -1.0
        if not grace > 0 or grace == float("inf"):
            parser.error(f"--interrupt-grace: {args.interrupt_grace!r} is not a number of "
                         "seconds > 0")
    return Launch(nproc, script, command[1:], args.master_addr, port, grace)


def free_port(addr: str) -> int:
    """A port free on `addr` now. Rank 0 binds it a moment later: another process could take it
    in between, a race torchrun's standalone mode has too; a failed bind fails the ranks."""
    with socket.socket() as s:
        s.bind((addr, 0))
        port: int = s.getsockname()[1]
        return port


def rank_environment(base: dict[str, str], rank: int, world: int, addr: str,
                     port: int) -> dict[str, str]:
    """Rank `rank`'s environment: `base` and what torchrun sets for a worker of one node."""
    child = dict(base)
    child.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world),
                   LOCAL_WORLD_SIZE=str(world), MASTER_ADDR=addr, MASTER_PORT=str(port),
                   GROUP_RANK="0", GROUP_WORLD_SIZE="1", ROLE_RANK=str(rank),
                   ROLE_WORLD_SIZE=str(world), ROLE_NAME="default",
                   TORCHELASTIC_RESTART_COUNT="0", TORCHELASTIC_MAX_RESTARTS="0",
                   # torchrun's default --rdzv-id: a fixed value, so no two runs of an audit
                   # differ by it (torch.distributed.is_torchelastic_launched() reads it).
                   TORCHELASTIC_RUN_ID="none")
    if world > 1 and "OMP_NUM_THREADS" not in base:
        # As torchrun: N ranks of all the cores each would oversubscribe the machine, and a
        # script audited under torchrun on newer torch gets the same thread count here.
        child["OMP_NUM_THREADS"] = "1"
    return child


def die_with_launcher() -> Optional[Callable[[], None]]:
    """The preexec_fn that makes a rank receive SIGKILL when the launcher ends, however it ends
    (kill -9 included: no handler of ours could run then). None where prctl is not Linux's."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: the child only calls it
    launcher = os.getpid()

    def preexec() -> None:
        if prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")
        if os.getppid() != launcher:  # the launcher ended before prctl: no signal will come
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


class StopSignals:
    """SIGINT, SIGTERM and SIGHUP, passed on to the ranks; the first one received is kept, to end
    the launcher by it. A signal ignored when the launcher started stays ignored (as a shell's
    background job ignores SIGINT, its ranks should too)."""

    def __init__(self) -> None:
        self.received: Optional[int] = None
        self.ranks: list["subprocess.Popen[bytes]"] = []

    def install(self) -> None:
        for signum in FORWARDED_SIGNALS:
            if signal.getsignal(signum) is not signal.SIG_IGN:
                signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, _frame: object) -> None:
        if self.received is None:
            self.received = signum
        signal_ranks(self.ranks, signum)


def signal_ranks(ranks: Sequence["subprocess.Popen[bytes]"], signum: int) -> None:
    for process in ranks:
        if process.poll() is None:  # a reaped rank's pid may be another process's by now
            try:
                process.send_signal(signum)
            except ProcessLookupError:
                pass


def start_ranks(launch: Launch, port: int, stop: StopSignals) -> None:
    """Starts the ranks into stop.ranks, so that a signal reaches those started; none after one."""
    preexec = die_with_launcher()
    for rank in range(launch.nproc):
        if stop.received is not None:
            return
        child = rank_environment(settings.child_environment(), rank, launch.nproc,
                                 launch.master_addr, port)
        # -u as torchrun: the ranks' lines reach a pipe (exec's log) as they are printed.
        command = [sys.executable, "-u", launch.script, *launch.script_args]
        stop.ranks.append(subprocess.Popen(command, env=child, preexec_fn=preexec))


def status_of(returncode: int) -> int:
    """A rank's status as a shell gives it: its exit code, or 128 + S when signal S killed it."""
    return returncode if returncode >= 0 else 128 - returncode


def describe(returncode: int) -> str:
    if returncode >= 0:
        return f"exited with status {returncode}"
    return f"was killed by signal {-returncode} ({signal.Signals(-returncode).name})"


def _failure(ranks: Sequence["subprocess.Popen[bytes]"], interrupted_at: Optional[float],
             interrupt_grace_s: float) -> Optional[tuple[int, str]]:
    """The launch's failure seen now, as (status, what to say), or None: the lowest rank that
    failed (exit 75 is none); or, once a rank ended interrupted, a rank that ended 0 (the ranks
    must all stop at the interrupt) or ranks still running past the interrupt's grace."""
    for rank, process in enumerate(ranks):
        if process.returncode not in (None, 0, INTERRUPTED_EXIT):
            return (status_of(process.returncode),
                    f"rank {rank} (pid {process.pid}) {describe(process.returncode)}")
    if interrupted_at is None:
        return None
    codes = [p.returncode for p in ranks]
    stopped = [r for r, c in enumerate(codes) if c == INTERRUPTED_EXIT]
    if 0 in codes:
        return (1, f"rank {codes.index(0)} exited with status 0, but rank {stopped[0]} was "
                   f"interrupted (status {INTERRUPTED_EXIT}): every rank must stop at the same "
                   "save (rec.saved at the same point of the same step; docs/resume.md)")
    if time.monotonic() >= interrupted_at + interrupt_grace_s:
        late = [r for r, c in enumerate(codes) if c is None]
        return (1, f"rank(s) {', '.join(map(str, late))} still running "
                   f"{interrupt_grace_s:g} s after rank {stopped[0]} was interrupted (status "
                   f"{INTERRUPTED_EXIT}): does every rank tell the recorder of the same save "
                   "(docs/resume.md)?")
    return None


def supervise(stop: StopSignals, grace_s: float,
              interrupt_grace_s: float = INTERRUPT_GRACE_S) -> Optional[int]:
    """Waits for every rank to end. The first failure seen (_failure) makes the other ranks stop;
    its status is returned. INTERRUPTED_EXIT when every rank ended with it; None when no rank
    failed on its own (a rank stopped by a signal the launcher passed on has not)."""
    failed: Optional[int] = None
    kill_at: Optional[float] = None
    interrupted_at: Optional[float] = None  # when the first rank ended interrupted
    while True:
        running = [p for p in stop.ranks if p.poll() is None]
        if interrupted_at is None and any(p.returncode == INTERRUPTED_EXIT for p in stop.ranks):
            interrupted_at = time.monotonic()
        if failed is None and stop.received is None:
            failure = _failure(stop.ranks, interrupted_at, interrupt_grace_s)
            if failure is not None:
                failed, what = failure
                print(f"{PROG}: {what}; stopping the other ranks", file=sys.stderr, flush=True)
                signal_ranks(running, signal.SIGTERM)
        if not running:
            if failed is None and stop.received is None and interrupted_at is not None:
                return INTERRUPTED_EXIT  # every rank ended interrupted (_failure saw no 0)
            return failed
        if kill_at is None and (failed is not None or stop.received is not None):
            kill_at = time.monotonic() + grace_s
        if kill_at is not None and time.monotonic() >= kill_at:
            signal_ranks(running, signal.SIGKILL)
        time.sleep(POLL_S)


def end_by_signal(signum: int) -> int:
    """Ends the launcher by `signum`, as the ranks it was passed on to: its caller (a shell,
    `repro-audit exec`) sees what a single process stopped by it would show."""
    sys.stdout.flush()
    sys.stderr.flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    return 128 + signum  # only if the signal did not end the process


def main(argv: Optional[Sequence[str]] = None, grace_s: float = STOP_GRACE_S) -> int:
    launch = parse(sys.argv[1:] if argv is None else argv)
    port = launch.master_port or free_port(launch.master_addr)
    stop = StopSignals()
    stop.install()
    try:
        start_ranks(launch, port, stop)
    except (OSError, subprocess.SubprocessError) as e:
        print(f"{PROG}: could not start rank {len(stop.ranks)}: {e}; stopping the others",
              file=sys.stderr, flush=True)
        signal_ranks(stop.ranks, signal.SIGKILL)
        for process in stop.ranks:
            process.wait()
        return 1
    failed = supervise(stop, grace_s, launch.interrupt_grace_s)
    if failed is not None:
        return failed
    if stop.received is not None:
        return end_by_signal(stop.received)
    return 0


if __name__ == "__main__":
    sys.exit(main())
