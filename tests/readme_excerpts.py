"""README.md's quickstarts cannot rot: a code block right after a line
    <!-- excerpt of PATH -->
must be a run of consecutive lines of PATH (which CI builds and runs: examples/c/main.c by
tests/install/run.sh, examples/wasi/quickstart.sh by test.sh). Every such marker is checked, and
the ones this project's quickstarts need must be there.

    readme_excerpts.py [REPO_ROOT]
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
readme = open(os.path.join(root, "README.md"), encoding="utf-8").read()
blocks = re.findall(r"^<!-- excerpt of (\S+) -->\n```\w*\n(.*?)^```", readme, re.M | re.S)
required = {"examples/c/main.c", "examples/wasi/quickstart.sh"}
missing = required - {p for p, _ in blocks}
assert not missing, f"README.md has no excerpt of {sorted(missing)}"
for path, block in blocks:
    source = open(os.path.join(root, path), encoding="utf-8").read().splitlines()
    lines = block.splitlines()
    assert lines, f"{path}: empty block"
    starts = [i for i in range(len(source) - len(lines) + 1) if source[i:i + len(lines)] == lines]
    if not starts:  # say where it first differs, from the best-matching start
        best = max(range(len(source)), key=lambda i: sum(1 for a, b in zip(source[i:], lines) if a == b))
        for k, (a, b) in enumerate(zip(source[best:], lines)):
            if a != b:
                sys.exit(f"readme_excerpts: README.md's block for {path} differs at line {best + k + 1}:\n"
                         f"  file:   {a!r}\n  README: {b!r}")
        sys.exit(f"readme_excerpts: README.md's block for {path} runs past the file's end")
    print(f"{path}: lines {starts[0] + 1}-{starts[0] + len(lines)}")
print(f"readme_excerpts: ok ({len(blocks)} blocks)")
