"""docs/scale-out.md cannot rot: each block after <!-- example: examples/scale-out/FILE --> must be
that file, character for character, and examples/scale-out/run.sh (the serving steps: fine-tune in
lithe, export to ONNX from Python and from the command line, check, serve with onnxruntime-node)
runs here in a scratch folder.
Usage: scale_out_doc.py REPO_ROOT LITHE_CLI LIBLITHE. Prints "scale_out_doc: ok"."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

repo, cli, lib = (os.path.abspath(a) for a in sys.argv[1:4])
text = open(os.path.join(repo, "docs", "scale-out.md"), encoding="utf-8").read()
blocks = dict(re.findall(r"<!-- example: (\S+) -->\n```[a-z]*\n(.*?)```\n", text, flags=re.S))
files = ("examples/scale-out/finetune.py", "examples/scale-out/serve.mjs", "examples/scale-out/run.sh")
for rel in files:
    if rel not in blocks:
        sys.exit(f"scale_out_doc: docs/scale-out.md shows no block for {rel}")
    if open(os.path.join(repo, rel), encoding="utf-8").read() != blocks[rel]:
        sys.exit(f"scale_out_doc: {rel}: the block in docs/scale-out.md differs from the file")
work = tempfile.mkdtemp(prefix="lithe_scale_out_")
try:
    for rel in files:
        shutil.copy(os.path.join(repo, rel), work)
    os.symlink(os.path.join(repo, "bench", "node_modules"), os.path.join(work, "node_modules"))
    bin_dir = os.path.join(work, "bin")
    os.mkdir(bin_dir)
    os.symlink("/usr/bin/python3", os.path.join(bin_dir, "python3"))
    os.symlink(cli, os.path.join(bin_dir, "lithe"))
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"],
               PYTHONPATH=os.path.join(repo, "shims", "python"), LITHE_LIBRARY=lib)
    r = subprocess.run(["sh", "run.sh"], cwd=work, env=env)
    if r.returncode:
        sys.exit(f"scale_out_doc: run.sh failed ({r.returncode})")
finally:
    shutil.rmtree(work, ignore_errors=True)
print("scale_out_doc: ok")
