"""What the tests of tests/python share (issue 64, part 4), instead of a copy per file: the built
tool, found by the pytest plugin's own fixture (`repro_audit_binary`: REPRO_AUDIT_BINARY, which
CTest sets, else repro-audit on PATH; without it a test errors at setup saying how to name it),
the environment a test's command runs in, and a runner of the tool in it.

    def test_x(tool, tmp_path):
        done = tool("exec", "--runs", 2, "--out", tmp_path / "out", "--", sys.executable, script,
                    STEPS=3)   # keywords: environment variables of the command

    def test_y(audit_environment, tmp_path):   # a command other than the tool: a script
        subprocess.run([sys.executable, script], env=audit_environment(REPRO_AUDIT_TRACE=trace))

`tool` and the fixture `audit_environment` are session-scoped, so a module-scoped fixture that
records runs once can take them. A test that means to pass one of the caller's REPRO_AUDIT_*
variables on says so with a keyword (it is set after the caller's are left out); `without=`
leaves out more of the caller's (a launcher's RANK, say).

The plugin's fixture is imported, not the plugin loaded with `pytest_plugins`: pytest refuses that
in a conftest.py below the rootdir (`pytest tests` from the checkout's root), and these tests mark
nothing `reproducible` (tests/python/test_pytest_plugin.py loads the plugin in its own runs)."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from typing import Any, Callable, Dict, Iterable

import pytest

from repro_audit.pytest_plugin import repro_audit_binary  # noqa: F401 (a fixture, by name)

Tool = Callable[..., "subprocess.CompletedProcess[str]"]


def audit_environment(*, without: Iterable[str] = (), **extra: object) -> Dict[str, str]:
    """The environment of a command a test runs: the caller's, without an audit's variables
    (REPRO_AUDIT_*: the command's audit sets its own) or the names in `without` (a launcher's
    RANK and WORLD_SIZE, say), with this Python's sys.path as PYTHONPATH (the recorder the test
    imports), and `extra` as strings."""
    left_out = set(without)
    environment = {k: v for k, v in os.environ.items()
                   if not k.startswith("REPRO_AUDIT_") and k not in left_out}
    environment["PYTHONPATH"] = os.pathsep.join(sys.path)
    environment.update({k: str(v) for k, v in extra.items()})
    return environment


@pytest.fixture(scope="session", name="audit_environment")
def audit_environment_fixture() -> Callable[..., Dict[str, str]]:
    """audit_environment itself, for a test or fixture that runs a command other than the tool (a
    script, the launcher) in the same environment: a fixture, as pytest would have conftest.py
    reached (importing it by name works only in pytest's default import mode)."""
    return audit_environment


@pytest.fixture(scope="session")
def tool(repro_audit_binary: str) -> Tool:  # noqa: F811 (the imported fixture, as an argument)
    """Runs the tool with the arguments given (str() of each) in
    audit_environment(without=without, **keywords); its CompletedProcess, text, output captured.
    Session-scoped, as repro_audit_binary is, so that a module-scoped fixture that records runs
    once can use it: it holds no state, and the environment is read at each call (a test's
    monkeypatch.setenv reaches the command)."""
    def run(*args: object, timeout: float | None = None, without: Iterable[str] = (),
            **environment: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run([repro_audit_binary, *[str(a) for a in args]], capture_output=True,
                              text=True, env=audit_environment(without=without, **environment),
                              timeout=timeout)
    return run


FASHION_IMAGES = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"
EngineAudit = Callable[[Dict[str, Any]], pathlib.Path]


@pytest.fixture(scope="module")
def engine_audit(tmp_path_factory: pytest.TempPathFactory, tool: Tool) -> EngineAudit:
    """The engine's run 0 of a spec (a dict) in a folder of its own, with its initial weights
    and batch order (`run --save-batches`): where a PyTorch replay starts from
    (repro_audit.engine_run.EngineRun); the folder. Fails the test when Fashion-MNIST is missing
    (the cross-checks read it)."""
    def run(spec: Dict[str, Any]) -> pathlib.Path:
        if not os.path.exists(FASHION_IMAGES):
            pytest.fail(f"{FASHION_IMAGES} missing: scripts/setup installs dataset-fashion-mnist")
        folder = tmp_path_factory.mktemp("engine")
        (folder / "spec.json").write_text(json.dumps(spec))
        done = tool("-q", "run", folder / "spec.json", "--runs", "1", "--save-batches",
                    "--allow-empty", "--out", folder / "engine")
        assert done.returncode == 0, done.stderr
        return folder / "engine"
    return run
