"""The Python package as a user installs it: a wheel built from shims/python with Debian's
setuptools and wheel (no PyPI: --no-build-isolation, --no-index), carrying liblithe.so; installed
into a fresh virtual environment (/usr/bin/python3 -m venv --system-site-packages: Thinc, numpy and
torch come from Debian); then the README's Python quickstart (examples/python/quickstart.py) runs
there, from an empty folder, with neither PYTHONPATH nor LITHE_LIBRARY set, and must predict as
Thinc. Usage: python_wheel.py LIBLITHE_SO WORKDIR. Prints "python_wheel: ok"."""
import os
import shutil
import subprocess
import sys
import zipfile

PY = "/usr/bin/python3"
repo = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
lib, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])


def run(*args, **kw):
    r = subprocess.run(args, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"python_wheel: {' '.join(map(str, args))} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r.stdout


shutil.rmtree(work, ignore_errors=True)
# a copy of the sources: the build writes build/ and *.egg-info beside them
src = os.path.join(work, "src")
shutil.copytree(os.path.join(repo, "shims/python"), src,
                ignore=shutil.ignore_patterns("__pycache__", "build", "dist", "*.egg-info", "liblithe.so"))
env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LITHE_LIBRARY")}
run(PY, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w",
    os.path.join(work, "wheels"), src, env={**env, "LITHE_LIBRARY": lib})
[wheel] = os.listdir(os.path.join(work, "wheels"))
tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
assert wheel.startswith("lithe-") and f"-{tag}-{tag}-linux_" in wheel, wheel
names = zipfile.ZipFile(os.path.join(work, "wheels", wheel)).namelist()
for f in ("lithe/__init__.py", "lithe/liblithe.so", "lithe/py.typed", "lithe/thinc.py"):
    assert f in names, (f, names)
assert any(n.endswith(".dist-info/LICENSE") for n in names), names
# the licence the wheel carries is the repository's (shims/python/LICENSE is its copy)
assert open(os.path.join(repo, "LICENSE")).read() == open(os.path.join(repo, "shims/python/LICENSE")).read()

venv = os.path.join(work, "venv")
# (--without-pip: Debian's pip, visible through the system site-packages, installs into the venv;
# ensurepip would only copy another pip in)
run(PY, "-m", "venv", "--system-site-packages", "--without-pip", venv, env=env)
vpy = os.path.join(venv, "bin", "python")
run(vpy, "-m", "pip", "install", "-q", "--no-deps", "--no-index", os.path.join(work, "wheels", wheel), env=env)

user = os.path.join(work, "user")
os.makedirs(user)
where = run(vpy, "-c", "import lithe; print(lithe.__file__); print(lithe._lib.lib._name); print(lithe.__version__)",
            cwd=user, env=env).split()
assert where[0].startswith(venv) and where[1].startswith(venv), f"lithe imported from outside the venv: {where}"
assert where[1].endswith("lithe/liblithe.so"), where
out = run(vpy, os.path.join(repo, "examples/python/quickstart.py"), cwd=user, env=env)
assert "convert with .astype(numpy.float32)" in out and "classes:" in out, out
assert os.path.getsize(os.path.join(user, "tuned.lithe")) > 1000
print(f"python_wheel: {wheel} ({os.path.getsize(os.path.join(work, 'wheels', wheel))} bytes), lithe {where[2]} from the venv")
print("python_wheel: ok")
