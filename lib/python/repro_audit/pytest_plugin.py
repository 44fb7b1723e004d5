"""Reproducibility as a test: the pytest plugin `repro_audit.pytest_plugin` (docs/pytorch.md,
"Testing with pytest").

    @pytest.mark.reproducible(runs=2)
    def test_training_is_reproducible():
        repro_audit.seed_everything(default=0)
        model, optimizer = ...
        with repro_audit.record(model, optimizer) as rec:
            for step in range(5):
                ...; optimizer.step(); rec.step(batch=(x, y), loss=loss)

The marked test's body is not run in the pytest process that collected it. The plugin runs

    repro-audit exec --runs N --out <tmp_path>/repro-audit/audit --json .../report.json \\
        -- <python> -m pytest <the test> -p repro_audit.pytest_plugin -p no:cacheprovider -q ...

so each run is a fresh process, a real run of the recorder writing a trace (exec sets
REPRO_AUDIT_TRACE), and the verdict is the tool's, the same report and exit code as the shell line
`repro-audit exec -- python3 train.py`. Inside a run (REPRO_AUDIT_TRACE is set: the process is
one run of an audit, this plugin's or one started by hand) the marked test runs its body plainly,
once: the audit around it is the check. The test passes on exit 0 and fails on every other exit
code with the report's first lines (the verdict, the first divergence, the root cause, the next
step) or the tool's error, as the failure's message, which pytest's --junitxml writes.

Loaded by the entry point `pytest11: repro_audit.pytest_plugin` (pip install ./lib/python) or by
`-p repro_audit.pytest_plugin`; the entry point's name is the module's, so the two spellings are
one plugin and `-p repro_audit.pytest_plugin` works with and without the install.
"""
from __future__ import annotations

import argparse
import dataclasses
import difflib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Final, Generator, List, Mapping, Optional, Sequence, Union

import pytest

from . import settings

MARKER: Final = "reproducible"
PLUGIN: Final = "repro_audit.pytest_plugin"
BINARY_VARIABLE: Final = settings.BINARY
TRACE_VARIABLE: Final = settings.TRACE  # set by exec in each run: the process is a run
RUN_BASETEMP: Final = "--repro-run-basetemp"  # the runs' pytest: where each run's basetemp goes
RUNS_TMP: Final = "runs-tmp"  # in the test's report folder: run-N, each run's basetemp
SKIPPED_NOTE: Final = "skipped-run"  # in RUNS_TMP: a run's reason for skipping the test
MAX_RUNS: Final = 10000  # exec's --runs limit
MAX_JOBS: Final = 256  # exec's --jobs limit
EXPECTATIONS: Final = ("identical", "any")
SEED_GROUPS: Final = ("same", "different", "both", "all")
# What exec's exit codes mean (docs/cli.md, "Exit codes"), for a failure that has no report.
EXIT_MEANINGS: Final[Mapping[int, str]] = {
    1: "the runs are not bitwise identical",
    2: "bad input or usage",
    3: "a run failed",
    4: "the audit is incomplete",
    5: "nothing was compared",
    6: "inconclusive",
}
MESSAGE_ERROR_LINES: Final = 12  # of the tool's stderr, at most, in a failure's message

MARKER_HELP: Final = (
    f"{MARKER}(runs=2, ops=None, expect='identical', seeds='same', timeout=None, jobs=1, "
    "allow_empty=False): run the test's body in `runs` fresh processes under `repro-audit exec` "
    "(the body records with repro_audit.record) and fail unless the runs are bitwise identical "
    "(docs/pytorch.md, \"Testing with pytest\")")


@dataclasses.dataclass(frozen=True)
class Reproducible:
    """The marker's options, checked: what `exec` is asked for.

    runs: the runs of the test's body (exec --runs; --repro-runs overrides it);
    ops: the op window, "A:B", "A:", "N", "all" or a step number (exec --trace-ops), so that the
        report names the op where the runs part;
    expect: "identical" (fail unless bitwise identical) or "any" (report, never fail on a
        difference);
    seeds: "same", "different", "both" or "all" (exec --seeds);
    timeout: seconds one run may take (exec --timeout), None for no limit;
    jobs: runs at once (exec --jobs);
    allow_empty: pass when nothing was compared (fewer than two runs that recorded a step).
    """

    runs: int = 2
    ops: Union[str, int, None] = None
    expect: str = "identical"
    seeds: str = "same"
    timeout: Optional[float] = None
    jobs: int = 1
    allow_empty: bool = False

    @classmethod
    def from_marker(cls, mark: pytest.Mark, runs_override: Optional[int] = None
                    ) -> "Reproducible":
        """The options of `@pytest.mark.reproducible(...)`; ValueError naming the argument that
        exec would refuse or that the marker does not take."""
        if mark.args:
            raise ValueError(f"{MARKER}{mark.args!r}: the options are keywords, as in "
                             f"{MARKER}(runs=2)")
        names = [f.name for f in dataclasses.fields(cls)]
        for name in mark.kwargs:
            if name not in names:
                near = difflib.get_close_matches(name, names, n=1)
                hint = f"; did you mean {near[0]}?" if near else ""
                raise ValueError(f"{MARKER}({name}=...): no such option{hint} "
                                 f"(options: {', '.join(names)})")
        options = cls(**mark.kwargs)
        if runs_override is not None:
            options = dataclasses.replace(options, runs=runs_override)
        options.check()
        return options

    def check(self) -> None:
        _check_integer("runs", self.runs, 1, MAX_RUNS)
        _check_integer("jobs", self.jobs, 1, MAX_JOBS)
        if self.expect not in EXPECTATIONS:
            raise ValueError(f"{MARKER}(expect={self.expect!r}): expected one of "
                             f"{', '.join(map(repr, EXPECTATIONS))}")
        if self.seeds not in SEED_GROUPS:
            raise ValueError(f"{MARKER}(seeds={self.seeds!r}): expected one of "
                             f"{', '.join(map(repr, SEED_GROUPS))}")
        if self.timeout is not None and (
                isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float)) or
                not 0 < self.timeout < float("inf")):
            raise ValueError(f"{MARKER}(timeout={self.timeout!r}): expected seconds, a number "
                             "> 0, or None")
        if not isinstance(self.allow_empty, bool):
            raise ValueError(f"{MARKER}(allow_empty={self.allow_empty!r}): expected True or "
                             "False")
        if self.ops is not None:
            self.op_window()

    def op_window(self) -> Optional[str]:
        """`ops` as exec's --trace-ops takes it; ValueError unless it is a window."""
        if self.ops is None:
            return None
        if isinstance(self.ops, int) and not isinstance(self.ops, bool) and self.ops >= 0:
            return str(self.ops)
        if isinstance(self.ops, str):
            try:
                settings.parse_window(self.ops)  # the recorder's own reading of the window
            except ValueError:
                pass
            else:
                return self.ops.strip()
        raise ValueError(f"{MARKER}(ops={self.ops!r}): expected an op window: a step number, "
                         "'A:B' (steps A to B-1), 'A:' or 'all'")

    def exec_options(self) -> List[str]:
        options = ["--runs", str(self.runs), "--seeds", self.seeds, "--expect", self.expect]
        window = self.op_window()
        if window is not None:
            options += ["--trace-ops", window]
        if self.timeout is not None:
            options += ["--timeout", repr(float(self.timeout))]
        if self.jobs != 1:
            options += ["--jobs", str(self.jobs)]
        if self.allow_empty:
            options.append("--allow-empty")
        return options


def _check_integer(name: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{MARKER}({name}={value!r}): expected an integer in [{low}, {high}]")


def under_an_audit() -> bool:
    """Whether this process is one run of an audit (exec set its trace file): then a marked test
    runs its body, and the audit around the process is the check."""
    return settings.trace_named() is not None


def find_binary(who: str = f"@pytest.mark.{MARKER}", base: Optional[Path] = None) -> str:
    """REPRO_AUDIT_BINARY (a relative path is taken from `base`, pytest's invocation folder: a
    test or fixture may have changed the working folder since), else `repro-audit` on PATH, as an
    absolute path; ValueError saying how to name it (and that `who` needs it)."""
    named, search_path = settings.tool_variables()
    if named:
        path = os.path.join(base or os.getcwd(), named)
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise ValueError(f"{BINARY_VARIABLE}={named!r} is not an executable file: name the "
                             "built repro-audit (build/apps/repro-audit/repro-audit)")
        return os.path.abspath(path)
    found = shutil.which("repro-audit", path=search_path)
    if found is None:
        raise ValueError(
            f"{who} needs the repro-audit tool: put repro-audit on PATH or set "
            f"{BINARY_VARIABLE}=/path/to/repro-audit (the build's "
            "build/apps/repro-audit/repro-audit; docs/pytorch.md, \"Testing with pytest\")")
    return os.path.abspath(found)


@dataclasses.dataclass(frozen=True)
class Outcome:
    """One audit of a test: exec's exit code, its report's text (stdout) and errors (stderr)."""

    exit_code: int
    text: str
    errors: str
    folder: Path
    json_report: Path

    def report(self) -> Optional[Dict[str, Any]]:
        try:
            with open(self.json_report, encoding="utf-8") as file:
                report: Dict[str, Any] = json.load(file)
                return report
        except (OSError, ValueError):
            return None

    def verdict_line(self) -> Optional[str]:
        lines = self.text.splitlines()
        return lines[1] if len(lines) > 1 else None

    def failure_message(self, options: Reproducible) -> str:
        """What the failing test says: the report's first lines when there is a report, the
        tool's errors when there is none; the folder where the rest is."""
        meaning = EXIT_MEANINGS.get(self.exit_code, "an unexpected exit code")
        head = (f"repro-audit exec: {meaning} (exit {self.exit_code}; runs={options.runs}, "
                f"expect={options.expect!r})")
        lines = [head]
        if self.text.strip():
            lines += self.report_head()
        errors = [line for line in self.errors.splitlines() if line.startswith("[error]")]
        if not errors and not self.text.strip():
            errors = self.errors.strip().splitlines()
        lines += errors[-MESSAGE_ERROR_LINES:]
        if self.exit_code == 5 and not options.allow_empty:
            lines.append("(the body must record at least one step in at least two runs: "
                         "runs >= 2 and rec.step(...); allow_empty=True accepts nothing "
                         "compared)")
        lines.append(f"report: {self.folder} (report.json; each run's output in "
                     "audit/run-NNN/command.log)")
        return "\n".join(lines)

    def report_head(self) -> List[str]:
        """The text report's first block (the header, the verdict, the first divergence and its
        explanation, the root cause, warnings) and its next step, which names the marker's option
        where the tool names an exec command."""
        text = self.text.splitlines()
        end = text.index("") if "" in text else len(text)
        head: List[str] = []
        next_step: List[str] = []
        in_next_step = False
        for line in text[:end]:
            if line.startswith("next step:"):
                next_step, in_next_step = [line], True
            elif in_next_step and line.startswith("  "):  # the next step's advice lines
                next_step.append(line)
            else:
                head.append(line)
                in_next_step = False
        report = self.report()
        step = report.get("next_step") if report else None
        if isinstance(step, dict) and step.get("kind") == "trace_ops" and step.get("trace_ops"):
            # exec names its own command again with --trace-ops; here the marker is the command.
            window = step["trace_ops"]
            next_step = [f"next step: @pytest.mark.{MARKER}(..., ops={window!r}) on this test"]
            next_step += [f"  ({advice})" for advice in step.get("advice") or []]
        return head + next_step


def audit_folder(item: pytest.Function, out: Optional[str]) -> Path:
    """The test's report folder: --repro-out DIR/<the test's name>, else <tmp_path>/repro-audit."""
    if out is None:
        return Path(str(item.funcargs["tmp_path"])) / "repro-audit"
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", item.nodeid)[-80:].strip("._") or "test"
    digest = hashlib.sha256(item.nodeid.encode("utf-8")).hexdigest()[:8]
    return Path(out).resolve() / f"{name}-{digest}"


def passed_plugins(args: Sequence[str]) -> List[str]:
    """The `-p NAME` options of pytest's command line, for the runs' pytest (`-p no:randomly`
    matters to them as to the test), without this plugin, which the runs get anyway."""
    plugins: List[str] = []
    words = list(args)
    for index, word in enumerate(words):
        if word == "-p" and index + 1 < len(words):
            name = words[index + 1]
        elif word.startswith("-p") and len(word) > 2:
            name = word[2:]
        else:
            continue
        if name != PLUGIN:
            plugins += ["-p", name]
    return plugins


def run_command(item: pytest.Item, folder: Path) -> List[str]:
    """The runs' command: this Python's pytest on the one test, from the same folder, with the
    same rootdir and configuration file; each run's temporary files in `folder`/runs-tmp/run-N
    (pytest's own numbered folders would push the test's tmp_path out of the three pytest keeps,
    and runs at once must not share one)."""
    config = item.config
    _, _, inside = item.nodeid.partition("::")
    target = f"{item.path}::{inside}" if inside else str(item.path)
    command = [sys.executable, "-m", "pytest", target, "-p", PLUGIN, "-p", "no:cacheprovider",
               "-q", f"--rootdir={config.rootpath}", f"{RUN_BASETEMP}={folder / RUNS_TMP}"]
    if config.inipath is not None:
        command += ["-c", str(config.inipath)]
    return command + passed_plugins(config.invocation_params.args)


def run_environment() -> Dict[str, str]:
    """This process's environment, with the folder this package was imported from on PYTHONPATH
    (last: a path given first still wins), so that the runs record with this recorder."""
    return settings.child_environment(python_path=str(Path(__file__).resolve().parent.parent),
                                      path_first=False)


def audit(item: pytest.Item, options: Reproducible, binary: str, folder: Path) -> Outcome:
    """Runs the test's body `options.runs` times under `repro-audit exec`."""
    (folder / RUNS_TMP).mkdir(parents=True, exist_ok=True)  # pytest makes only the last level
    out = folder / "audit"
    json_report = folder / "report.json"
    json_report.unlink(missing_ok=True)  # --repro-out: never an earlier session's report
    command = [binary, "exec", *options.exec_options(), "--out", str(out), "--json",
               str(json_report)]
    if (out / "audit.json").exists():  # --repro-out of an earlier session: this audit replaces it
        command.append("--overwrite")
    command += ["--", *run_command(item, folder)]
    done = subprocess.run(command, capture_output=True, text=True, env=run_environment(),
                          cwd=str(item.config.invocation_params.dir))
    return Outcome(done.returncode, done.stdout, done.stderr, folder, json_report)


@pytest.fixture(scope="session")
def repro_audit_binary(pytestconfig: pytest.Config) -> str:
    """The repro-audit tool the marker runs (REPRO_AUDIT_BINARY, else repro-audit on PATH), for a
    test that runs it itself (`compare`, `exec` with options of its own); without one, each test
    that asks errors at setup saying how to name it."""
    try:
        return find_binary(who="the fixture repro_audit_binary",
                           base=pytestconfig.invocation_params.dir)
    except ValueError as error:
        problem = f"repro_audit: {error}"
    pytest.fail(problem, pytrace=False)


_OPTIONS_KEY = pytest.StashKey[Reproducible]()
_BINARY_KEY = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("repro-audit", "reproducibility audits (repro_audit)")
    group.addoption("--repro-runs", type=_positive_runs, default=None, metavar="N",
                    help=f"runs of every test marked {MARKER}, whatever its marker says")
    group.addoption("--repro-out", default=None, metavar="DIR",
                    help=f"keep each {MARKER} test's audit in DIR/<test> (default: the test's "
                    "tmp_path/repro-audit)")
    group.addoption(RUN_BASETEMP, default=None, help=argparse.SUPPRESS)  # the plugin's runs only


def _positive_runs(text: str) -> int:
    if not re.fullmatch(r"[0-9]+", text) or not 1 <= int(text) <= MAX_RUNS:
        raise argparse.ArgumentTypeError(f"{text!r}: expected an integer in [1, {MAX_RUNS}]")
    return int(text)


@pytest.hookimpl(tryfirst=True)  # type: ignore[misc]  # before the tmpdir plugin's basetemp
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    runs_tmp = config.getoption(RUN_BASETEMP)
    if runs_tmp and under_an_audit():
        config.option.basetemp = str(Path(runs_tmp) / f"run-{settings.run_index()}")


def pytest_collection_modifyitems(items: List[pytest.Item]) -> None:
    if under_an_audit():
        return
    for item in items:
        if item.get_closest_marker(MARKER) is not None and isinstance(item, pytest.Function):
            # This process never calls the body, so it makes none of its fixtures (a fixture
            # that loads a data set is made in each run, not once more here), only tmp_path, the
            # default report folder. A new list: parametrized items share their function's.
            item.fixturenames = ["tmp_path"]


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A marker exec would refuse, or no tool to run, is the test's error at setup: never a
    silent skip, never a pass. (Not tryfirst: a skip or skipif marker is applied first.)"""
    mark = item.get_closest_marker(MARKER)
    if mark is None or under_an_audit():
        return
    if not isinstance(item, pytest.Function):
        pytest.fail(f"@pytest.mark.{MARKER} marks test functions, not {type(item).__name__}",
                    pytrace=False)
    try:
        item.stash[_OPTIONS_KEY] = Reproducible.from_marker(
            mark, item.config.getoption("--repro-runs"))
        item.stash[_BINARY_KEY] = find_binary(base=item.config.invocation_params.dir)
        problem = None
    except ValueError as error:
        problem = f"repro_audit: {error}"
    if problem is not None:  # outside the except block: no "During handling of ..." chain
        pytest.fail(problem, pytrace=False)


@pytest.hookimpl(hookwrapper=True)  # type: ignore[misc]  # (pluggy's marker is untyped)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, Any, None]:
    """In a run the plugin started: a skip (pytest.skip or importorskip in the body or in a
    fixture) is noted for the test's own process, which then skips too rather than fail for the
    trace the run did not write."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    runs_tmp = item.config.getoption(RUN_BASETEMP)
    if not runs_tmp or not report.skipped or not under_an_audit():
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    reason = reason[len("Skipped: "):] if reason.startswith("Skipped: ") else reason
    note = Path(runs_tmp) / f"{SKIPPED_NOTE}-{settings.run_index()}"
    note.write_text(reason, encoding="utf-8")


def skip_reasons(folder: Path) -> List[str]:
    """The reasons the runs skipped the test, as they noted them (pytest_runtest_makereport)."""
    notes = sorted((folder / RUNS_TMP).glob(f"{SKIPPED_NOTE}-*"))
    return sorted({note.read_text(encoding="utf-8") for note in notes})


@pytest.hookimpl(tryfirst=True)  # type: ignore[misc]  # (pluggy's marker is untyped)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Optional[bool]:
    """A marked test's call: the audit of its body instead of the body (a run of the audit, where
    REPRO_AUDIT_TRACE is set, calls the body as pytest does)."""
    if pyfuncitem.get_closest_marker(MARKER) is None or under_an_audit():
        return None
    options = pyfuncitem.stash[_OPTIONS_KEY]
    folder = audit_folder(pyfuncitem, pyfuncitem.config.getoption("--repro-out"))
    outcome = audit(pyfuncitem, options, pyfuncitem.stash[_BINARY_KEY], folder)
    pyfuncitem.user_properties.append(("repro_audit_report", str(folder)))
    verdict = outcome.verdict_line()
    if verdict is not None:
        pyfuncitem.user_properties.append(("repro_audit_verdict", verdict))
    if outcome.exit_code != 0:
        skipped = skip_reasons(folder)
        if skipped:
            pytest.skip(f"skipped in the runs of repro-audit exec: {'; '.join(skipped)}")
        pytest.fail(outcome.failure_message(options), pytrace=False)
    return True

