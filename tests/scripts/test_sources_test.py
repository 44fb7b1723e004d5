#!/usr/bin/env python3
"""scripts/test-sources: lists the files whose test cases a pattern matches (names split over
several literals included), brings a folder's helpers along, and fails on what it cannot read: a
pattern without its folder, a pattern that matches nothing, a TEST_CASE named by a macro."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "test-sources")

FILES = {
    "tests/core/pool_test.cpp": 'TEST_CASE("the pool runs tasks in parallel", "[core]") {}\n'
    'TEST_CASE("the pool has a size", "[core]") {}\n',
    "tests/core/digest_test.cpp": 'TEST_CASE("digests are exact", "[core]") {}\n',
    "tests/core/helper.cpp": "int helper() { return 1; }\n",
    "tests/cli/jobs_test.cpp": 'TEST_CASE(\n    "run --jobs 2 gives "\n    "the same traces",\n'
    '    "[cli]") {}\n',
    "tests/data/loader_test.cpp": 'TEST_CASE("workers load in order") {}\n',
}


def run(files, *patterns):
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w", encoding="utf-8") as f:
                f.write(text)
        result = subprocess.run([sys.executable, SCRIPT, "--root", root, *patterns],
                                capture_output=True, text=True, check=False)
    return result.returncode, result.stdout.splitlines(), result.stderr


class TestSources(unittest.TestCase):
    def test_selects_the_matching_files_and_their_folder_helpers(self):
        code, out, _ = run(FILES, "^core: ?.*parallel", "^cli: ?.*jobs 2 gives the same")
        self.assertEqual(code, 0)
        self.assertEqual(out, ["cli/jobs_test.cpp", "core/helper.cpp", "core/pool_test.cpp",
                               "cases 2"])

    def test_a_pattern_without_its_folder_fails(self):
        code, _, err = run(FILES, ".*parallel")
        self.assertEqual(code, 1)
        self.assertIn("does not start with its folder", err)

    def test_a_pattern_that_matches_nothing_fails(self):
        code, _, err = run(FILES, "^core: ?.*parallel", "^data: ?.*shards")
        self.assertEqual(code, 1)
        self.assertIn("^data: ?.*shards", err)

    def test_a_test_case_named_by_a_macro_fails(self):
        files = dict(FILES)
        files["tests/core/macro_test.cpp"] = "TEST_CASE(NAME, \"[core]\") {}\n"
        code, _, err = run(files, "^core: ?.*parallel")
        self.assertEqual(code, 1)
        self.assertIn("macro_test.cpp", err)


if __name__ == "__main__":
    unittest.main()
