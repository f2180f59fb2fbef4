"""The lithe command's conventions (tools/lithe/cli.h, docs/cli.md): every subcommand answers --help
with exit 0 and its usage on stdout, a wrong option with exit 2 and a message that names it, a
missing or bad value with exit 2; --version and `version` agree; exit codes are documented in each
--help; training shows progress within an epoch on stderr, as a bar (LITHE_PROGRESS=bar, what a
terminal gets) or as plain lines, and stdout stays the same report.

    cli_options.py LITHE
"""
import os
import re
import subprocess
import sys

lithe = sys.argv[1]
COMMANDS = ["train-mnist", "train-tagger", "info", "run", "convert", "bench", "layers", "version"]


def run(*args, env=None):
    e = dict(os.environ)
    e.pop("LITHE_PROGRESS", None)
    e.update(env or {})
    r = subprocess.run([lithe, *args], capture_output=True, env=e, timeout=600)
    # decoded by hand: text mode would turn the bar's carriage returns into newlines
    r.stdout, r.stderr = r.stdout.decode(), r.stderr.decode()
    return r


checked = 0
for cmd in COMMANDS:
    for flag in ("--help", "-h"):
        r = run(cmd, flag)
        assert r.returncode == 0, f"{cmd} {flag}: exit {r.returncode}\n{r.stderr}"
        assert r.stdout.startswith(f"usage: lithe {cmd}"), f"{cmd} {flag}: {r.stdout[:200]!r}"
        assert "exit status: 0 success; 1 runtime error" in r.stdout and "2 usage error" in r.stdout, cmd
        assert r.stderr == "", f"{cmd} {flag}: {r.stderr!r}"
    r = run("help", cmd)
    assert r.returncode == 0 and r.stdout.startswith(f"usage: lithe {cmd}"), f"help {cmd}"
    # an unknown option: exit 2, named, and nothing run (info does not try to open a file named --bogus)
    for bogus in ("--bogus", "--bogus=3", "-Z"):
        r = run(cmd, bogus)
        assert r.returncode == 2, f"{cmd} {bogus}: exit {r.returncode}\n{r.stdout}{r.stderr}"
        name = bogus.split("=")[0]
        assert re.search(rf"lithe {cmd}: unknown option {re.escape(name)}\b", r.stderr), f"{cmd} {bogus}: {r.stderr!r}"
        assert r.stdout == "", f"{cmd} {bogus}: {r.stdout!r}"
    checked += 1

# options that need a value, and bad values
usage_errors = [
    (["train-mnist", "--epochs"], r"option --epochs needs a value"),
    (["train-mnist", "--epochs", "x"], r"--epochs: 'x' is not a whole number"),
    (["train-mnist", "--model", "cnn"], r"--model: 'cnn' is not one of relu maxout"),
    (["train-mnist", "--learn-rate", "-1"], r"--learn-rate: '-1' is not a number"),
    (["train-mnist", "stray"], r"unexpected argument stray"),
    (["train-mnist", "--help=1"], r"unknown option --help, or it takes no value"),
    (["train-tagger", "--batch-size", "65"], r"--batch-size: '65' is not a whole number from 1 to 64"),
    (["train-tagger", "--seed", "-3"], r"--seed: '-3' is not a whole number"),
    (["info"], r"which model"),
    (["info", "a.lithe", "b.lithe"], r"one model, please"),
    (["run", "model.lithe"], r"needs --input"),
    (["run", "model.lithe", "--input"], r"option --input needs a value"),
    (["convert", "model.lithe"], r"needs MODEL.lithe --to-thinc"),
    (["convert", "model.lithe", "--to-onnx", "a.onnx", "--to-thinc", "a.bin"], r"needs MODEL.lithe --to-thinc"),
    (["bench"], r"needs a MODEL or --gemm"),
    (["bench", "--gemm", "3x17"], r"bad value for --gemm: 3x17"),
    (["bench", "--train=yes", "--gemm", "2x2x2"], r"unknown option --train, or it takes no value"),
    (["layers", "extra"], r"unexpected argument extra"),
    (["nonsense"], r"unknown command 'nonsense'"),
    (["--bogus"], r"lithe: unknown option --bogus"),
    (["help", "nonsense"], r"unknown command 'nonsense'"),
]
for args, pattern in usage_errors:
    r = run(*args)
    assert r.returncode == 2, f"{' '.join(args)}: exit {r.returncode}\n{r.stdout}{r.stderr}"
    assert re.search(pattern, r.stderr), f"{' '.join(args)}: {r.stderr!r}"
    checked += 1

# runtime errors are 1
for args in (["info", "/nonexistent/model.lithe"], ["train-mnist", "--data", "/nonexistent"]):
    r = run(*args)
    assert r.returncode == 1, f"{' '.join(args)}: exit {r.returncode}\n{r.stderr}"

# the top level
r = run()
assert r.returncode == 2 and "usage: lithe COMMAND" in r.stderr
for flag in ("--help", "-h", "help"):
    r = run(flag)
    assert r.returncode == 0 and r.stdout.startswith("usage: lithe COMMAND"), flag
    assert all(f"  {c}" in r.stdout for c in COMMANDS) and "exit status:" in r.stdout
v1, v2 = run("--version"), run("version")
assert v1.returncode == 0 and re.fullmatch(r"lithe \d+\.\d+\.\d+\n", v1.stdout) and v1.stdout == v2.stdout

# progress within an epoch, on stderr: plain lines at an interval, or the bar; stdout unchanged
train = ["train-mnist", "--epochs", "1", "--limit", "1000", "--batch-size", "50"]
quiet = run(*train, env={"LITHE_PROGRESS": "0"})
assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
lines = run(*train, env={"LITHE_PROGRESS": "0.000001"})
assert lines.returncode == 0, lines.stderr
plain = re.findall(r"^epoch 1: (\d+)/1000 examples \(\d+%\), \d+ examples/s, ETA [\d.:]+( s)?, loss \d+\.\d{4}$",
                   lines.stderr, re.M)
assert len(plain) >= 10 and [int(p[0]) for p in plain] == sorted(int(p[0]) for p in plain), lines.stderr
assert "\r" not in lines.stderr
bar = run(*train, env={"LITHE_PROGRESS": "bar"})
assert bar.returncode == 0, bar.stderr
frames = re.findall(r"\repoch 1  \[[#.]{20}\] +\d+%  (\d+)/1000 examples  \d+ examples/s  ETA [^ ]+( s)?  loss \d\.\d{4}\x1b\[K",
                    bar.stderr)
assert frames and bar.stderr.endswith("\r\x1b[K"), repr(bar.stderr[:300])
strip_time = lambda out: re.sub(r"[\d.]+ s\b.*", "", out)
assert strip_time(bar.stdout) == strip_time(quiet.stdout) == strip_time(lines.stdout)
print(f"cli_options: ok ({checked} subcommand and usage checks, {len(plain)} progress lines, {len(frames)} bar frames)")
