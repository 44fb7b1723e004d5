"""pip's build writes its build/ and egg-info folders into a temporary folder, not into lib/python
(a checkout stays clean after `pip install ./lib/python`). Metadata is in pyproject.toml."""
import atexit
import shutil
import tempfile

from setuptools import setup

_work = tempfile.mkdtemp(prefix="repro-audit-build-")
atexit.register(shutil.rmtree, _work, True)
setup(options={"build": {"build_base": _work + "/build"}, "egg_info": {"egg_base": _work}})
