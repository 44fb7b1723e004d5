"""What every benchmark of scripts/bench shares (`scripts/bench --list` names them): the order in
which a round runs its arms (ABBA), timing a command (wall time, peak resident memory), the
statistics docs/performance.md quotes (medians, minimum and maximum, ratios of the arms of one
round) and the rows of their tables. Tested by tests/scripts/bench_harness_test.py.

Standard library only, and no Python newer than 3.6 needs: bench-pytorch and bench-recorder-gpu
import it on a lent GPU machine (scripts/gpu-verify), with whatever python3 is there.
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.path.join(ROOT, "build", "apps", "repro-audit", "repro-audit")
KERAS_SPEC = os.path.join(ROOT, "configs", "keras-mnist-fashion.json")
QUICK_SPEC = os.path.join(ROOT, "configs", "quick.json")


def program():
    """The running benchmark's name (bench-html), for its messages."""
    return os.path.basename(sys.argv[0])


# Rounds. On a shared host the load changes from second to second: a figure of one arm taken
# minutes after another's says little, so the arms take turns, round after round.

def order(arms, r, kind="abba"):
    """The arms in the order round r (counted from 0) runs them. "abba": as given in even rounds,
    reversed in odd ones (A B, B A, A B, ...; A B C, C B A, ...), so that a load rising or
    falling through the rounds favours no arm; "same": as given in every round (A B, A B, ...)."""
    if kind not in ("abba", "same"):
        raise ValueError("order: kind is abba or same, not %r" % (kind,))
    arms = list(arms)
    return arms[::-1] if kind == "abba" and r % 2 == 1 else arms


def alternate(arms, rounds, measure, kind="abba"):
    """measure(arm, r) of every arm in every round r = 0 .. rounds - 1, in order()'s order:
    {arm: [its result in round 0, in round 1, ...]}, so that one index is one round's."""
    results = {arm: [] for arm in arms}
    for r in range(rounds):
        for arm in order(arms, r, kind):
            results[arm].append(measure(arm, r))
    return results


# Statistics.

Summary = collections.namedtuple("Summary", "median min max count")


def median(values):
    """The middle value; of an even count the mean of the two middle ones (statistics.median)."""
    values = list(values)
    if not values:
        raise ValueError("median of no values")
    return statistics.median(values)


def summary(values):
    """Median, minimum, maximum and count of values."""
    values = sorted(values)
    return Summary(median(values), values[0], values[-1], len(values))


def round_ratios(values, bases):
    """values[r] / bases[r] of each round r: the two ran seconds apart, under one host load."""
    values, bases = list(values), list(bases)
    if len(values) != len(bases):
        raise ValueError("round_ratios: %d values against %d bases" % (len(values), len(bases)))
    return [v / b for v, b in zip(values, bases)]


def median_round_ratio(values, bases):
    """The median of the rounds' own ratios: on a loud host steadier than ratio_of_medians."""
    return median(round_ratios(values, bases))


def ratio_of_medians(values, bases):
    return median(values) / median(bases)


# Output.

def row(cells, widths, sep=" "):
    """One line of a table: cells[i] padded to widths[i] characters, right-aligned (figures) or,
    where the width is negative, left-aligned (names). A wider cell is not cut."""
    return sep.join(("%-*s" if w < 0 else "%*s") % (abs(w), c) for c, w in zip(cells, widths))


def figure(value, spec):
    """value formatted by spec (".3f"); "-" for None (an arm that has no such figure)."""
    return "-" if value is None else format(value, spec)


def listed(values, spec, sep=", "):
    """Every value, formatted by spec: "1.02, 0.98, 1.10"."""
    return sep.join(format(v, spec) for v in values)


# Commands.

def timed(argv, ok=(0,), **options):
    """Runs argv (options: subprocess.run's) to its end: (wall seconds, the CompletedProcess).
    Exits, naming the command, when its exit code is not one of ok."""
    started = time.perf_counter()
    done = subprocess.run(argv, **options)
    seconds = time.perf_counter() - started
    if done.returncode not in ok:
        tail = done.stderr[-2000:] if isinstance(done.stderr, str) else ""
        command = " ".join([os.path.basename(argv[0])] + list(argv[1:3]))
        sys.exit("%s: %s ... exited %d%s" % (program(), command, done.returncode,
                                              ":\n" + tail if tail else ""))
    return seconds, done


Process = collections.namedtuple("Process", "seconds code peak_mib")


def exit_code(status):
    """A wait status as subprocess says it (os.waitstatus_to_exitcode is Python 3.9's)."""
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def measured(argv, stdout=None, stderr=None):
    """Runs argv to its end: its wall seconds, exit code and peak resident memory in MiB, its own
    (wait4 gives this child's rusage alone: ru_maxrss, KiB on Linux). stdout, stderr: paths of
    files its output goes to (os.devnull: nowhere; one path for both: one file), None: ours.

    Linux carries into a child's ru_maxrss, at its exec, the resident pages of the memory it had
    before: with fork the private pages copied from this process, with vfork (subprocess,
    posix_spawn) this process's whole peak. So this forks, as the benchmarks did before the
    harness, and a child's peak reads at least this process's private memory (a few MiB, more
    once it has imported torch: bench-long-run's python arm)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    sys.stdout.flush()
    sys.stderr.flush()
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            out = os.open(stdout, flags, 0o644) if stdout else 1
            err = out if stderr and stderr == stdout else (
                os.open(stderr, flags, 0o644) if stderr else 2)
            os.dup2(out, 1)
            os.dup2(err, 2)
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)  # not back into the benchmark's code: exec failed
    _, status, usage = os.wait4(pid, 0)
    return Process(time.perf_counter() - started, exit_code(status), usage.ru_maxrss / 1024.0)


# Settings and inputs of the audit benchmarks (configured by the environment: ROUNDS=4 ...).

def environment_only(doc):
    """The command line of a benchmark its environment configures (ROUNDS=4 scripts/bench-html):
    --help prints doc, an argument is a usage error (exit 2)."""
    argparse.ArgumentParser(description=doc, usage="[SETTING=VALUE...] %(prog)s",
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()


def setting(name, default):
    """An integer from the environment, as bash's ${NAME:-default}."""
    text = os.environ.get(name) or str(default)
    try:
        return int(text)
    except ValueError:
        sys.exit("%s: %s must be an integer, not %r" % (program(), name, text))


def build(quiet=False):
    """scripts/build into $BUILD_DIR (default build/), the build a benchmark times; its
    repro-audit binary. quiet: the build's own output dropped."""
    folder = os.environ.get("BUILD_DIR") or os.path.join(ROOT, "build")
    done = subprocess.run([os.path.join(ROOT, "scripts", "build")],
                          env=dict(os.environ, BUILD_DIR=folder),
                          stdout=subprocess.DEVNULL if quiet else None)
    if done.returncode != 0:
        sys.exit(done.returncode)
    return os.path.join(folder, "apps", "repro-audit", "repro-audit")


def write_spec(path, source=KERAS_SPEC, max_steps=None, epochs=None, threads=None,
               keep_eval=True):
    """A copy of the spec source at path, cut to max_steps steps or epochs epochs, on threads
    threads, without its eval set unless keep_eval."""
    with open(source) as f:
        spec = json.load(f)
    if max_steps is not None:
        spec["train"]["max_steps"] = max_steps
    if epochs is not None:
        spec["train"]["epochs"] = epochs
    if threads is not None:
        spec["threads"] = threads
    if not keep_eval:
        spec["data"].pop("eval", None)
    with open(path, "w") as f:
        json.dump(spec, f)
    return path
