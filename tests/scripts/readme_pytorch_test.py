#!/usr/bin/env python3
"""The PyTorch user's first hour, as the README tells it: the command lines under '## Your PyTorch
script' run in order, with bash, in a fresh folder holding a small train.py written as the README's
script lines say (seed_everything(default=args.seed), the `with` form, rec.step after
optimizer.step()). Every line must succeed (exit 0): the install line makes python3 (Debian's, with
torch) import the recorder, the same command twice moves the earlier audit aside, and the audits
report bitwise identical runs.

Usage: readme_pytorch_test.py BINARY   (CTest passes the built repro-audit)
"""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = None

TRAIN = """
import argparse, torch
import repro_audit
parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=1)
args = parser.parse_args()
repro_audit.seed_everything(default=args.seed)   # the audit's seed, else the script's own
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
inputs, labels = torch.randn(24, 6), torch.randint(0, 3, (24,))
loader = [(inputs[i:i + 8], labels[i:i + 8]) for i in range(0, 24, 8)]
epochs = 2
with repro_audit.record(model, optimizer) as rec:
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad(); loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward(); optimizer.step()
            rec.step(batch=(x, y), loss=loss, epoch=epoch)   # after optimizer.step()
"""


def readme_blocks():
    """The two code blocks under '## Your PyTorch script': the script's lines, the commands."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("## Your PyTorch script\n\n", 1)[1].split("\n## ", 1)[0]
    blocks, current = [], []
    for line in section.splitlines() + [""]:
        if line.startswith("    "):
            current.append(line[4:])
        elif current and not line.strip():
            blocks.append(current)
            current = []
    return blocks


def code_of(line):
    return line.split("  #")[0].strip()


class ReadmePytorch(unittest.TestCase):
    def test_train_py_is_the_readme_script(self):
        script, _ = readme_blocks()
        lines = [code_of(line) for line in TRAIN.splitlines()]
        for line in script:
            self.assertIn(code_of(line).replace("...; ", ""), "\n".join(lines), line)

    def test_the_command_lines_run_in_order(self):
        _, commands = readme_blocks()
        self.assertTrue(commands[0].startswith("export PYTHONPATH=$(repro-audit python-path)"))
        self.assertGreaterEqual(len(commands), 4)
        # One shell, as a user types them: each line's success marked on stderr.
        shell = "set -e\n" + "".join(f"{c}\necho '@@ line {i} ok' >&2\n"
                                      for i, c in enumerate(commands))
        with tempfile.TemporaryDirectory() as folder:
            bin_dir = os.path.join(folder, "bin")
            os.mkdir(bin_dir)
            os.symlink(BINARY, os.path.join(bin_dir, "repro-audit"))
            work = os.path.join(folder, "work")
            os.mkdir(work)
            with open(os.path.join(work, "train.py"), "w", encoding="utf-8") as f:
                f.write(TRAIN)
            # A new user's shell: the tool on PATH, Debian's python3 (with torch) first, no
            # PYTHONPATH and no audit's variables.
            env = {k: v for k, v in os.environ.items()
                   if k != "PYTHONPATH" and not k.startswith("REPRO_AUDIT_")}
            env["PATH"] = bin_dir + ":/usr/bin:" + env.get("PATH", "")
            done = subprocess.run(["bash", "-c", shell], cwd=work, env=env, capture_output=True,
                                  text=True, timeout=600, stdin=subprocess.DEVNULL)
            passed = done.stderr.count("@@ line ")
            failing = commands[passed] if passed < len(commands) else "(none)"
            self.assertEqual(done.returncode, 0,
                             f"{failing}\nexit {done.returncode}\n{done.stderr[-3000:]}")
            self.assertEqual(passed, len(commands))
            self.assertIn("moved the earlier audit in repro-audit-out/train", done.stderr)
            self.assertIn("BITWISE IDENTICAL", done.stdout)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    BINARY = os.path.abspath(sys.argv.pop(1))
    unittest.main()
