"""A stand-in for `torchrun --standalone --nproc-per-node N SCRIPT`, for the tests: Debian's
torch 1.13 on Python 3.11 cannot start torchrun (its Std.from_str returns None under 3.11's
IntFlag, and start_processes fails before any rank runs). It sets what torchrun sets (RANK,
LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT on a free port), starts the
ranks and, as torchrun does, stops the others and fails when one fails.

    python3 launch_ranks.py N script.py [args...]
"""
import os
import signal
import socket
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    world, command = int(sys.argv[1]), sys.argv[2:]
    port = str(free_port())
    ranks = []
    for rank in range(world):
        environ = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world),
                       LOCAL_WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        ranks.append(subprocess.Popen([sys.executable] + command, env=environ))
    failed = 0
    while any(p.poll() is None for p in ranks) and not failed:
        failed = next((p.returncode for p in ranks if p.returncode not in (None, 0)), 0)
        time.sleep(0.05)
    failed = failed or next((p.returncode for p in ranks if p.returncode), 0)
    for p in ranks:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in ranks:
        p.wait()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
