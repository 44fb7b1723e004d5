#!/usr/bin/env python3
"""scripts/build-profile: sums a Ninja log's times by group (library module, test folder, CUDA
kernels, links), counts only the newest entry of an output that was rebuilt, and refuses what is
not a Ninja log with exit 2 and the file's name."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "build-profile")

# start, end (ms), mtime, output, hash: the lines of a real v5 log (build-o0, 28 November 2026).
LOG = """# ninja log v5
86\t10506\t1795823529547616205\tlib/CMakeFiles/ra_core.dir/core/byte_reader.cpp.o\t6a55e767c979d42a
72\t14598\t1795823533647616383\tlib/CMakeFiles/ra_core.dir/core/atomic_file.cpp.o\t568802954118dbc1
100\t2100\t1795823533647616384\tlib/CMakeFiles/ra_kernels.dir/__/kernels/digest.cu.o\t1
0\t3000\t1795823533647616385\ttests/CMakeFiles/test_audit.dir/audit/shard_test.cpp.o\t2
0\t1000\t1795823533647616386\ttests/CMakeFiles/test_audit.dir/audit/shard_test.cpp.o\t3
5\t505\t1795823533647616387\ttests/test_audit\t4
"""


def run(text, *extra):
    with tempfile.TemporaryDirectory() as build:
        with open(os.path.join(build, ".ninja_log"), "w", encoding="utf-8") as f:
            f.write(text)
        result = subprocess.run([sys.executable, SCRIPT, build, *extra], capture_output=True,
                                text=True, check=False)
    return result.returncode, result.stdout, result.stderr


def group_line(out, name):
    return next(line.split() for line in out.splitlines() if line.startswith(name))


class BuildProfile(unittest.TestCase):
    def test_sums_each_group_and_counts_a_rebuild_once(self):
        code, out, _ = run(LOG)
        self.assertEqual(code, 0)
        # ra_core: 10.420 + 14.526 s over 2 outputs.
        self.assertEqual(group_line(out, "lib: core")[2:4], ["2", "24.9"])
        self.assertEqual(group_line(out, "CUDA kernels")[-3:-1], ["1", "2.0"])
        # The rebuilt test object counts its newest entry, 1.0 s, not 3.0 + 1.0.
        self.assertEqual(group_line(out, "tests: audit")[2:4], ["1", "1.0"])
        self.assertEqual(group_line(out, "links and other steps")[-3:-1], ["1", "0.5"])
        self.assertEqual(group_line(out, "all")[1:3], ["5", "28.4"])

    def test_lists_the_slowest_outputs_first(self):
        code, out, _ = run(LOG, "--top", "2")
        self.assertEqual(code, 0)
        slowest = out.split("slowest outputs:")[1].split()
        self.assertEqual(slowest, ["14.5", "lib/CMakeFiles/ra_core.dir/core/atomic_file.cpp.o",
                                   "10.4", "lib/CMakeFiles/ra_core.dir/core/byte_reader.cpp.o"])

    def test_refuses_what_is_not_a_ninja_log(self):
        code, out, err = run("all: build\n")
        self.assertEqual(code, 2)
        self.assertEqual(out, "")
        self.assertIn("not a Ninja log", err)
        code, _, err = run("# ninja log v5\n1\t2\tonly three\n")
        self.assertEqual(code, 2)
        self.assertIn(".ninja_log:2: expected 5 tab-separated fields", err)

    def test_a_build_without_a_log_names_the_file(self):
        with tempfile.TemporaryDirectory() as build:
            result = subprocess.run([sys.executable, SCRIPT, build], capture_output=True,
                                    text=True, check=False)
        self.assertEqual(result.returncode, 2)
        self.assertIn(".ninja_log", result.stderr)


if __name__ == "__main__":
    unittest.main()
