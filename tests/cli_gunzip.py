"""The lithe command's own gunzip (tools/lithe/gunzip.c, which the WASI build reads Debian's
gzipped Fashion-MNIST with) against Python's zlib: every block type (stored, fixed, dynamic
Huffman), every compression level and strategy, the optional gzip header fields, and broken files,
each of which must be an error with a message (exit 1), never a crash or wrong bytes.

    cli_gunzip.py GUNZIP_CHECK WORKDIR
"""
import gzip
import os
import random
import struct
import subprocess
import sys
import zlib

check, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
rng = random.Random(0)


def gz_member(raw, level=6, strategy=zlib.Z_DEFAULT_STRATEGY, flags=0, extra=b"", name=b"", comment=b""):
    """A gzip member built by hand around zlib's raw deflate (so the header fields can be chosen)."""
    c = zlib.compressobj(level, zlib.DEFLATED, -15, 9, strategy)
    body = c.compress(raw) + c.flush()
    head = bytearray(b"\x1f\x8b\x08" + bytes([flags]) + b"\0\0\0\0\0\xff")
    if flags & 4:
        head += struct.pack("<H", len(extra)) + extra
    if flags & 8:
        head += name + b"\0"
    if flags & 16:
        head += comment + b"\0"
    if flags & 2:
        head += struct.pack("<H", zlib.crc32(bytes(head)) & 0xFFFF)
    return bytes(head) + body + struct.pack("<II", zlib.crc32(raw), len(raw) & 0xFFFFFFFF)


def run(data):
    src, dst = os.path.join(work, "in.gz"), os.path.join(work, "out.bin")
    with open(src, "wb") as f:
        f.write(data)
    if os.path.exists(dst):
        os.remove(dst)
    r = subprocess.run([check, src, dst], capture_output=True, text=True)
    out = open(dst, "rb").read() if r.returncode == 0 else None
    return r, out


# an IDX-like file: a header and bytes with the runs and repeats of images
idx = struct.pack(">IIII", 0x803, 40, 28, 28) + bytes(
    (rng.randrange(256) if rng.random() < 0.3 else 0) for _ in range(40 * 28 * 28))
texts = {
    "empty": b"",
    "one byte": b"x",
    "zeros": bytes(300000),
    "random": bytes(rng.randrange(256) for _ in range(100000)),
    "idx": idx,
    "text": b" ".join(str(i).encode() for i in range(60000)),
    "long repeats": (b"abcdefghij" * 5000 + bytes(range(256))) * 20,
}
ok = 0
for label, raw in texts.items():
    cases = [(f"level {lv}", gz_member(raw, level=lv)) for lv in (0, 1, 6, 9)]
    cases += [(f"strategy {s}", gz_member(raw, strategy=getattr(zlib, s)))
              for s in ("Z_FIXED", "Z_HUFFMAN_ONLY", "Z_RLE", "Z_FILTERED")]
    cases.append(("gzip module", gzip.compress(raw, mtime=0)))
    cases.append(("header fields", gz_member(raw, flags=2 | 4 | 8 | 16, extra=b"ab\x02\0xy", name=b"f.idx",
                                             comment=b"a comment")))
    for what, data in cases:
        r, out = run(data)
        assert r.returncode == 0, f"{label}, {what}: exit {r.returncode}: {r.stdout}{r.stderr}"
        assert out == raw, f"{label}, {what}: {len(out)} bytes differ from the {len(raw)} zlib gave"
        ok += 1

# broken files: an error with a message, exit 1
good = gz_member(idx, level=9)
stored = gz_member(texts["random"][:5000], level=0)
broken = {
    "truncated header": good[:12],
    "no magic": b"\x1f\x8c" + good[2:],
    "method 7": good[:2] + b"\x07" + good[3:],
    "reserved flag": good[:3] + b"\x20" + good[4:],
    "crc flipped": good[:-8] + bytes([good[-8] ^ 1]) + good[-7:],
    "isize too small": good[:-4] + struct.pack("<I", len(idx) - 1),
    "isize too large": good[:-4] + struct.pack("<I", len(idx) + 1),
    "isize over the ratio": good[:-4] + struct.pack("<I", 0xFFFFFFF0),
    "trailing bytes": good + b"\0\0\0\0",
    "second member": good + good,
    "block type 3": good[:10] + bytes([0x07]) + good[11:],
    "stored length check": stored[:11] + bytes([stored[11] ^ 0xFF]) + stored[12:],
    "stored truncated": stored[:200] + stored[-8:],
}
for cut in (11, 20, 100, len(good) // 2, len(good) - 9):
    broken[f"deflate cut at {cut}"] = good[:cut] + good[-8:]
# flipped bits inside the compressed data: a decoding error or the CRC catches it, never a crash
for i in range(40):
    pos = rng.randrange(10, len(good) - 8)
    broken[f"bit flip at {pos}"] = good[:pos] + bytes([good[pos] ^ (1 << rng.randrange(8))]) + good[pos + 1:]
errors = 0
for what, data in broken.items():
    r, out = run(data)
    if what.startswith("bit flip") and r.returncode == 0:
        assert out == idx, f"{what}: exit 0 with different bytes"  # a flip in unused padding bits
        continue
    assert r.returncode == 1, f"{what}: exit {r.returncode} {r.stdout}{r.stderr}"
    assert r.stdout.startswith("error: ") and len(r.stdout) > 12, f"{what}: {r.stdout!r}"
    errors += 1

# Debian's own files, when installed
for name in ("t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz"):
    path = os.path.join("/usr/share/datasets/fashion-mnist", name)
    if os.path.exists(path):
        r, out = run(open(path, "rb").read())
        assert r.returncode == 0 and out == gzip.decompress(open(path, "rb").read()), name
        ok += 1
print(f"cli_gunzip: ok ({ok} files as zlib decodes them, {errors} broken ones refused)")
