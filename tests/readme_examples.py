"""The README's quickstarts cannot rot: each code block the README marks with
<!-- example: PATH --> (on the line before the fence) must be the file PATH, character for
character, and CI runs those files (examples/node: bindings/js/test/pack.test.mjs;
examples/browser: its test.mjs with Vite, webpack and esbuild in Chromium; examples/python:
tests/python_wheel.py in a fresh venv). Usage: readme_examples.py [README.md]. Prints
"readme_examples: ok"."""
import os
import re
import sys

repo = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
readme = sys.argv[1] if len(sys.argv) > 1 else os.path.join(repo, "README.md")
text = open(readme, encoding="utf-8").read()
# a marker, then a fenced block: ```lang ... ```
blocks = re.findall(r"<!-- example: (\S+) -->\n```[a-z]*\n(.*?)```\n", text, flags=re.S)
markers = re.findall(r"<!-- example: (\S+) -->", text)
problems = []
if len(blocks) != len(markers):
    problems.append(f"{len(markers)} example markers but {len(blocks)} are followed by a fenced block")
for rel, code in blocks:
    path = os.path.join(repo, rel)
    if not os.path.isfile(path):
        problems.append(f"{rel}: no such file")
    elif open(path, encoding="utf-8").read() != code:
        problems.append(f"{rel}: the README's block differs from the file (copy the file into the README)")
# the audiences' quickstarts this checks at least
for rel in ("examples/browser/main.js", "examples/node/quickstart.mjs", "examples/python/quickstart.py"):
    if rel not in dict(blocks):
        problems.append(f"the README shows no block for {rel}")
if problems:
    sys.exit("readme_examples: " + "\n  ".join(problems))
print(f"readme_examples: {len(blocks)} blocks match their files")
print("readme_examples: ok")
