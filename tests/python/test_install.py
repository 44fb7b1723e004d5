"""The install lines of docs/pytorch.md ("Install"), run for real: `export PYTHONPATH=$(repro-audit
python-path)` makes the system python import the recorder; `pip install --no-build-isolation
./lib/python` in a venv made with --system-site-packages (Debian's torch) installs it offline and
writes nothing into lib/python (no build/, no egg-info), and pytest finds the plugin by its entry
point (`-p repro_audit.pytest_plugin` then names the same plugin); an exec whose command cannot
import repro_audit fails (exit 3) pointing at those lines. The tool is conftest.py's
repro_audit_binary (REPRO_AUDIT_BINARY names the built binary); its commands run here in a new
user's environment, not in audit_environment, which would hand them this Python's sys.path."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "lib" / "python"


def clean_environment():
    """The caller's environment without the test's PYTHONPATH or an audit's variables: a new
    user's shell."""
    return {k: v for k, v in os.environ.items()
            if k != "PYTHONPATH" and not k.startswith("REPRO_AUDIT_")}


def test_python_path_prints_the_folder_the_system_python_imports_from(repro_audit_binary):
    done = subprocess.run([repro_audit_binary, "python-path"], capture_output=True, text=True,
                          check=True)
    folder = done.stdout.strip()
    assert done.stdout.count("\n") == 1 and pathlib.Path(folder) == PACKAGE
    imported = subprocess.run(
        ["/usr/bin/python3", "-c", "import repro_audit; print(repro_audit.__file__)"],
        env=dict(clean_environment(), PYTHONPATH=folder), capture_output=True, text=True,
        check=True, cwd="/")
    assert pathlib.Path(imported.stdout.strip()) == PACKAGE / "repro_audit" / "__init__.py"


@pytest.mark.skipif(not os.path.exists("/usr/bin/python3"), reason="needs Debian's python3")
def test_pip_installs_into_a_venv_offline_and_leaves_the_package_folder_clean(tmp_path):
    # A copy of lib/python: the same files pip sees, and no other test reads a folder pip works in.
    source = tmp_path / "python"
    shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("__pycache__"))
    before = sorted(p.relative_to(source) for p in source.rglob("*"))
    venv = tmp_path / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(venv)],
                   check=True, env=clean_environment())
    # --no-index: the test must never wait on a network; the documented line needs none either.
    install = subprocess.run([str(venv / "bin" / "pip"), "install", "--no-build-isolation",
                              "--no-index", "-q", str(source)], capture_output=True, text=True,
                             env=clean_environment(), cwd=tmp_path)
    assert install.returncode == 0, install.stderr
    after = sorted(p.relative_to(source) for p in source.rglob("*")
                   if "__pycache__" not in p.parts)
    assert after == before  # no build/, no repro_audit.egg-info
    imported = subprocess.run(
        [str(venv / "bin" / "python"), "-c",
         "import torch, repro_audit; print(repro_audit.__file__)"],
        env=clean_environment(), capture_output=True, text=True, check=True, cwd="/")
    assert str(venv) in imported.stdout
    # The pytest plugin, by its entry point, and by -p with the entry point's name: one plugin.
    for more in ([], ["-p", "repro_audit.pytest_plugin"]):
        markers = subprocess.run([str(venv / "bin" / "python"), "-m", "pytest", "--markers",
                                  "-p", "no:cacheprovider", *more], env=clean_environment(),
                                 capture_output=True, text=True, cwd=tmp_path)
        assert markers.returncode == 0, markers.stderr
        assert "@pytest.mark.reproducible(runs=2, " in markers.stdout


def test_exec_points_at_the_install_line_when_the_recorder_is_missing(tmp_path,
                                                                     repro_audit_binary):
    script = tmp_path / "train.py"
    script.write_text("import repro_audit\n")
    done = subprocess.run([repro_audit_binary, "exec", "--runs", "2", "--out",
                           str(tmp_path / "out"), "--", "/usr/bin/python3", str(script)],
                          capture_output=True, text=True, env=clean_environment())
    assert done.returncode == 3
    assert "No module named 'repro_audit'" in done.stderr
    assert "export PYTHONPATH=$(repro-audit python-path)" in done.stderr
    assert "pip install --no-build-isolation ./lib/python" in done.stderr
