#!/usr/bin/env python3
"""The README's first usage block, run in order in a fresh folder as a new user would: every line
must succeed (exit 0). A usage line that collides with the one before (the default output folder
of an earlier audit), refers to a folder no line made, or drifts from the CLI fails here. And the
README's shape: at most 220 lines, every page of docs/ linked from it.

Usage: readme_usage_test.py BINARY   (CTest passes the built repro-audit)
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = None


def usage_lines():
    """The indented lines of the first code block under '## Usage' (comments stripped)."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    block = text.split("## Usage\n\n", 1)[1].split("\n\n", 1)[0]
    lines = []
    for line in block.splitlines():
        assert line.startswith("    repro-audit "), line
        command = line.strip()
        if " #" in command:
            command = command[: command.index(" #")].rstrip()
        lines.append(command)
    return lines


class ReadmeUsage(unittest.TestCase):
    def test_the_usage_lines_run_in_order(self):
        lines = usage_lines()
        self.assertGreaterEqual(len(lines), 15)
        with tempfile.TemporaryDirectory() as folder:
            shutil.copytree(os.path.join(ROOT, "configs"), os.path.join(folder, "configs"))
            for command in lines:
                args = command.split()[1:]
                done = subprocess.run([BINARY, "-q"] + args, cwd=folder, capture_output=True,
                                      text=True, timeout=300, stdin=subprocess.DEVNULL)
                self.assertEqual(done.returncode, 0,
                                 f"{command}\nexit {done.returncode}\n{done.stderr[-2000:]}")
            # What the lines made is where the lines say.
            self.assertTrue(os.path.exists(os.path.join(folder, "report.html")))
            self.assertTrue(os.path.exists(os.path.join(folder, "junit.xml")))
            moved = [n for n in os.listdir(os.path.join(folder, "repro-audit-out"))
                     if n.startswith("quick.")]
            self.assertGreaterEqual(len(moved), 4)  # each run into the default folder moved one


class ReadmeShape(unittest.TestCase):
    # Issue 60: a README a newcomer reads to the end, and no page of docs/ only a search finds.
    def test_it_fits_and_links_every_page(self):
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            text = f.read()
        self.assertLessEqual(len(text.splitlines()), 220)
        pages = [n for n in os.listdir(os.path.join(ROOT, "docs")) if n.endswith(".md")]
        self.assertGreater(len(pages), 15)
        unlinked = [n for n in pages if f"(docs/{n})" not in text]
        self.assertEqual(unlinked, [])


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    BINARY = os.path.abspath(sys.argv.pop(1))
    unittest.main()
