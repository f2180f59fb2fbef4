"""README.md's C and command-line quickstarts cannot rot: the code block after the line
<!-- example: examples/c/main.c --> must be that file, character for character, and likewise
examples/wasi/quickstart.sh; CI builds and runs both (tests/install/run.sh, test.sh's wasm stage).
The same marker and rule as the other audiences' quickstarts, so one checker can take them all.
Usage: readme_c_cli.py [REPO_ROOT]. Prints "readme_c_cli: ok"."""
import os
import re
import sys

repo = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
text = open(os.path.join(repo, "README.md"), encoding="utf-8").read()
blocks = dict(re.findall(r"<!-- example: (\S+) -->\n```[a-z]*\n(.*?)```\n", text, flags=re.S))
problems = []
for rel in ("examples/c/main.c", "examples/wasi/quickstart.sh"):
    if rel not in blocks:
        problems.append(f"the README shows no block for {rel}")
    elif open(os.path.join(repo, rel), encoding="utf-8").read() != blocks[rel]:
        problems.append(f"{rel}: the README's block differs from the file (copy the file into the README)")
if problems:
    sys.exit("readme_c_cli: " + "\n  ".join(problems))
print("readme_c_cli: ok")
