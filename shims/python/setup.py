"""The wheel's build step (pyproject.toml has the metadata): copies the C library into the package
as lithe/liblithe.so and marks the wheel platform-specific (it carries a native library, though no
extension module). The library: $LITHE_LIBRARY, else this checkout's build/default or build/ci."""
import ctypes
import glob
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))


def library():
    env = os.environ.get("LITHE_LIBRARY")
    if env:
        if not os.path.isfile(env):
            raise SystemExit(f"lithe: LITHE_LIBRARY={env} is not a file")
        return os.path.realpath(env)
    root = os.path.abspath(os.path.join(HERE, "..", ".."))
    for preset in ("default", "ci"):
        found = sorted(glob.glob(os.path.join(root, "build", preset, "liblithe.so")))
        if found:
            return os.path.realpath(found[0])
    raise SystemExit("lithe: liblithe.so not found; build it first (cmake --preset default && cmake --build "
                     "--preset default) or set LITHE_LIBRARY to its path")


def version(lib):
    f = ctypes.CDLL(lib).lithe_version
    f.restype = ctypes.c_char_p
    return f().decode()


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        dest = os.path.join(self.build_lib, "lithe", "liblithe.so")
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(LIB, dest)


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True  # the wheel is tagged for this platform and Python (cp311-cp311-linux_x86_64)


LIB = library()
setup(version=version(LIB), cmdclass={"build_py": BuildPyWithLibrary}, distclass=BinaryDistribution)
