#!/usr/bin/env python3
"""The checks of scripts/gpu-dry-run catch what they are for, on small fixtures (no GPU, no CUDA):
scripts/gpu-libs finds the wheels' library folders in namespace packages and names a library a
bundle lacks; scripts/gpu-limits names a tree too big to travel and a $OUT that would not all come
back; scripts/gpu-verify stops before running anything when a library is missing, yet leaves its
summary and archive."""
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIBS = os.path.join(ROOT, "scripts", "gpu-libs")
LIMITS = os.path.join(ROOT, "scripts", "gpu-limits")
VERIFY = os.path.join(ROOT, "scripts", "gpu-verify")
MiB = 1024 * 1024


def run(command, env=None, cwd=None):
    full_env = dict(os.environ)
    full_env.pop("PYTHONPATH", None)
    full_env.update(env or {})
    result = subprocess.run(command, capture_output=True, text=True, env=full_env, cwd=cwd, check=False)
    return result.returncode, result.stdout + result.stderr


def write(path, text=""):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def sparse(path, size):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(size)


class WheelLookup(unittest.TestCase):
    """`nvidia` and its parts are namespace packages without __file__, possibly split over several
    sys.path entries: the folders come from nvidia.__path__."""

    def test_finds_lib_folders_in_every_portion(self):
        with tempfile.TemporaryDirectory() as d:
            write(f"{d}/a/nvidia/cu13/lib/libcudart.so.13")
            write(f"{d}/b/nvidia/cudnn/lib/libcudnn.so.9")
            write(f"{d}/b/nvidia/cudnn/include/cudnn.h")
            write(f"{d}/b/nvidia/empty/lib/README")  # a lib folder without libraries
            rc, out = run([sys.executable, LIBS, "dirs"], {"PYTHONPATH": f"{d}/a:{d}/b"})
            self.assertEqual(rc, 0, out)
            self.assertEqual(out.split(), [f"{d}/a/nvidia/cu13/lib", f"{d}/b/nvidia/cudnn/lib"])

    def test_no_nvidia_package_is_named(self):
        with tempfile.TemporaryDirectory() as d:
            rc, out = run([sys.executable, "-S", LIBS, "dirs"], {"PYTHONPATH": d})
            self.assertEqual(rc, 1)
            self.assertIn("no 'nvidia' package", out)


@unittest.skipUnless(shutil.which("cc"), "needs a C compiler to make fixture binaries")
class LibraryCheck(unittest.TestCase):
    """A fixture binary needing a 'wheel' library (libfixturecuda) and zlib."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        d = self.dir.name
        self.wheel = f"{d}/site/nvidia/cu13/lib"
        os.makedirs(self.wheel)
        write(f"{d}/cuda.c", "int fixture_cuda(void) { return 1; }\n")
        write(f"{d}/main.c", '#include <zlib.h>\nint fixture_cuda(void);\n'
              "int main(void) { return fixture_cuda() + (zlibVersion() == 0); }\n")
        self.compile(["-shared", "-fPIC", "-Wl,-soname,libfixturecuda.so.1", f"{d}/cuda.c",
                      "-o", f"{self.wheel}/libfixturecuda.so.1"])
        os.symlink("libfixturecuda.so.1", f"{self.wheel}/libfixturecuda.so")
        self.bundle = f"{d}/bundle"
        os.makedirs(f"{self.bundle}/bin")
        os.makedirs(f"{self.bundle}/lib")
        self.binary = f"{self.bundle}/bin/repro-audit"
        self.compile([f"{d}/main.c", f"-L{self.wheel}", "-lfixturecuda", "-lz", "-o", self.binary])

    def tearDown(self):
        self.dir.cleanup()

    def compile(self, args):
        rc, out = run(["cc", *args])
        if rc != 0:
            self.skipTest(f"cannot build the fixture (zlib headers?): {out}")

    def check(self, *options, pythonpath=None):
        env = {"PYTHONPATH": pythonpath or f"{self.dir.name}/site", "LD_LIBRARY_PATH": ""}
        return run([sys.executable, LIBS, "check", "--bundle", self.bundle, *options, self.binary], env)

    def test_library_neither_carried_nor_in_a_wheel_is_named(self):
        rc, out = self.check("--strict")
        self.assertEqual(rc, 1, out)
        self.assertIn(f"{self.binary}: libz.so.1 resolved to", out)
        self.assertIn("neither carried in the bundle", out)

    def test_complete_bundle_passes_and_writes_its_path(self):
        rc, zlib = run(["sh", "-c", f"ldd {self.binary} | awk '$1 == \"libz.so.1\" {{print $3}}'"])
        shutil.copy(zlib.strip(), f"{self.bundle}/lib/libz.so.1")
        ld_path = f"{self.dir.name}/ld-path"
        rc, out = self.check("--strict", "--write-ld-path", ld_path)
        self.assertEqual(rc, 0, out)
        self.assertIn("libfixturecuda.so.1 => " + self.wheel, out)
        with open(ld_path) as f:
            self.assertTrue(f.read().startswith(f"{self.bundle}/lib:{self.wheel}"))

    def test_library_not_found_stops_even_without_strict(self):
        rc, out = self.check(pythonpath=f"{self.dir.name}/nowhere")
        self.assertEqual(rc, 1, out)
        self.assertIn(f"{self.binary}: libfixturecuda.so.1 not found", out)
        self.assertIn("no CUDA wheel library folder", out)

    def test_system_library_is_accepted_on_the_device_side(self):
        rc, out = self.check()  # without --strict: the image's own libz may serve
        self.assertEqual(rc, 0, out)

    def test_verify_stops_before_running_anything_and_still_reports(self):
        out_dir = f"{self.dir.name}/out"
        env = {"PYTHONPATH": f"{self.dir.name}/nowhere", "OUT": out_dir, "GPU_BUNDLE": self.bundle,
               "RA_STAGE_SECONDS": "60"}
        rc, out = run(["bash", VERIFY, "tests"], env)
        self.assertEqual(rc, 1, out)
        with open(f"{out_dir}/tests-summary.txt") as f:
            summary = f.read()
        self.assertIn("libfixturecuda.so.1 not found", summary)
        self.assertIn("STOPPED before running anything", summary)
        self.assertIn("RESULT tests: FAILED", summary)
        with tarfile.open(f"{out_dir}/tests.tar.gz") as archive:
            self.assertIn("./libraries.log", archive.getnames())
        self.assertEqual(sorted(os.listdir(out_dir)), ["tests-summary.txt", "tests.tar.gz"])


class Travel(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.repo = f"{self.dir.name}/repo"
        write(f"{self.repo}/README.md", "hello\n")
        write(f"{self.repo}/.gitignore", "/build/\n")
        sparse(f"{self.repo}/build/huge", 100 * MiB)  # ignored: does not travel
        run(["git", "init", "-q", self.repo])
        run(["git", "-C", self.repo, "add", "README.md", ".gitignore"])
        write(f"{self.repo}/untracked.txt", "travels too\n")

    def tearDown(self):
        self.dir.cleanup()

    def test_tree_and_bundle_within_64_mib_pass(self):
        sparse(f"{self.dir.name}/bundle/bin/repro-audit", 60 * MiB)
        rc, out = run([sys.executable, LIMITS, "travel", "--repo", self.repo, f"{self.dir.name}/bundle"])
        self.assertEqual(rc, 0, out)
        self.assertIn("working tree (3 files)", out)

    def test_too_big_is_reported(self):
        sparse(f"{self.dir.name}/bundle/data/train.gz", 64 * MiB)
        rc, out = run([sys.executable, LIMITS, "travel", "--repo", self.repo, f"{self.dir.name}/bundle"])
        self.assertEqual(rc, 1, out)
        self.assertIn("over the 64 MiB limit", out)


class Returns(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.out = self.dir.name

    def tearDown(self):
        self.dir.cleanup()

    def returns(self):
        return run([sys.executable, LIMITS, "returns", self.out])

    def test_eight_files_two_folders_down_pass(self):
        for i in range(7):
            write(f"{self.out}/stage-{i}.txt", "x")
        write(f"{self.out}/a/b/archive.tar.gz", "x")
        rc, out = self.returns()
        self.assertEqual(rc, 0, out)

    def test_a_ninth_file_is_reported(self):
        for i in range(9):
            write(f"{self.out}/stage-{i}.txt", "x")
        rc, out = self.returns()
        self.assertEqual(rc, 1, out)
        self.assertIn("9 files, over the 8 that come back", out)

    def test_too_deep_big_badly_named_or_linked_are_reported(self):
        write(f"{self.out}/a/b/c/deep.txt", "x")
        sparse(f"{self.out}/big.tar.gz", 17 * MiB)
        write(f"{self.out}/odd name.txt", "x")
        os.symlink("big.tar.gz", f"{self.out}/link")
        rc, out = self.returns()
        self.assertEqual(rc, 1, out)
        self.assertIn("a/b/c/deep.txt: more than 2 folders down", out)
        self.assertIn("big.tar.gz: 17.00 MiB, over 16 MiB", out)
        self.assertIn("odd name.txt: name has characters other than", out)
        self.assertIn("link: a link", out)


class VerifyUsage(unittest.TestCase):
    def test_unknown_stage_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            rc, out = run(["bash", VERIFY, "everything"], {"OUT": d})
            self.assertEqual(rc, 2)
            self.assertIn("usage: scripts/gpu-verify STAGE...", out)
            self.assertEqual(os.listdir(d), [])

    def test_stage_names_match_whole_names_only(self):
        # Part of a name, two names in one word, an empty word and a pattern are each refused;
        # every stage name alone is taken (each reaches the RA_STAGE_SECONDS check, not usage).
        for words in (["nv"], ["env tests"], [""], ["env", "*"], ["sanitiz"]):
            with tempfile.TemporaryDirectory() as d:
                rc, out = run(["bash", VERIFY] + words, {"OUT": d})
                self.assertEqual(rc, 2, words)
                self.assertIn("usage: scripts/gpu-verify STAGE...", out, words)
        for stage in ("env", "tests", "sanitize", "audit", "perf", "pytorch", "resnet"):
            with tempfile.TemporaryDirectory() as d:
                rc, out = run(["bash", VERIFY, stage], {"OUT": d, "RA_STAGE_SECONDS": "1"})
                self.assertEqual(rc, 2, stage)
                self.assertIn("RA_STAGE_SECONDS=1: give a whole number", out, stage)

    def test_stage_time_too_short_for_any_step_is_refused(self):
        for seconds in ("30", "49", "ninety", "-60"):
            with tempfile.TemporaryDirectory() as d:
                rc, out = run(["bash", VERIFY, "env"], {"OUT": d, "RA_STAGE_SECONDS": seconds})
                self.assertEqual(rc, 2, seconds)
                self.assertIn("RA_STAGE_SECONDS=" + seconds + ": give a whole number", out)
                self.assertEqual(os.listdir(d), [])


if __name__ == "__main__":
    unittest.main()
