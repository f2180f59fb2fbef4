// The relaxed-SIMD build (preset wasm-relaxed): clang 14 (Emscripten 3.1.6's and Debian's) emits
// the relaxed-SIMD proposal's old f32x4.fma (0xfd 0xaf 0x01), which engines shipping the standard
// (Chromium 114+) reject. The standard's f32x4.relaxed_madd (0xfd 0x85 0x02: a * b + c, the
// operand order gemm_wasmsimd.c writes its calls for) has the same encoded length, so each one is
// rewritten in place. The instructions are found by llvm-objdump's disassembly of the linked module
// (offsets into the code section), never by a byte search; any other relaxed instruction of the
// old encoding (none is used) is refused rather than left for an engine to misread.
// The int8 GEMM's relaxed kernel (backends/cpu/gemm/qgemm_wasmsimd.c) needs
// i32x4.relaxed_dot_i8x16_i7x16_add_s (0xfd 0x93 0x02), which clang 14 cannot write: the kernel
// writes the old f32x4.fms (0xfd 0xb0 0x01; three v128 operands, one result, the same length; no
// other lithe code uses it) in its place, rewritten here to the dot.
//   node relaxed-opcodes.mjs MODULE.wasm [--min N] [--min-dot N]
//   (--min: fail with fewer than N f32x4.fma rewritten; --min-dot: with fewer than N dots)
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';

const [file, ...rest] = process.argv.slice(2);
const opt = (name) => (rest.indexOf(name) >= 0 ? Number(rest[rest.indexOf(name) + 1]) : 0);
const min = opt('--min'), minDot = opt('--min-dot');
const bytes = fs.readFileSync(file);

function leb(at) {
  let v = 0, shift = 0, b;
  do {
    b = bytes[at++];
    v += (b & 0x7f) * 2 ** shift;
    shift += 7;
  } while (b & 0x80);
  return [v, at];
}

// the code section's payload (section id 10)
let codeAt = -1;
for (let at = 8; at < bytes.length;) {
  const id = bytes[at];
  const [size, payload] = leb(at + 1);
  if (id === 10) codeAt = payload;
  at = payload + size;
}
if (codeAt < 0) throw new Error(`${file}: no code section`);

const objdump = ['llvm-objdump-14', 'llvm-objdump'].find((c) => spawnSync(c, ['--version']).status === 0);
if (!objdump) throw new Error('relaxed-opcodes: llvm-objdump (Debian llvm-14, a dependency of clang) not found');
const dis = spawnSync(objdump, ['-d', file], { encoding: 'utf8', maxBuffer: 1 << 30 });
if (dis.status !== 0) throw new Error(`${objdump} -d ${file}: ${dis.stderr}`);
let n = 0, nDot = 0;
for (const line of dis.stdout.split('\n')) {
  const m = /^\s*([0-9a-f]+):\s+((?:[0-9a-f]{2} )+)\s*(\S+)/.exec(line);
  if (!m) continue;
  const [, off, hex, op] = m;
  if (op === 'f32x4.fma') {
    const at = codeAt + parseInt(off, 16);
    if (bytes[at] !== 0xfd || bytes[at + 1] !== 0xaf || bytes[at + 2] !== 0x01 || hex.trim() !== 'fd af 01')
      throw new Error(`${file}: f32x4.fma at code offset 0x${off} is not fd af 01 in the file`);
    bytes[at + 1] = 0x85;
    bytes[at + 2] = 0x02;
    n++;
  } else if (op === 'f32x4.fms') {
    const at = codeAt + parseInt(off, 16);
    if (bytes[at] !== 0xfd || bytes[at + 1] !== 0xb0 || bytes[at + 2] !== 0x01 || hex.trim() !== 'fd b0 01')
      throw new Error(`${file}: f32x4.fms at code offset 0x${off} is not fd b0 01 in the file`);
    bytes[at + 1] = 0x93;
    bytes[at + 2] = 0x02;
    nDot++;
  } else if (/fma|fms|relaxed|laneselect/.test(op)) {
    throw new Error(`${file}: ${op} at code offset 0x${off}: no rewrite to the standard encoding is known`);
  }
}
if (n < min) throw new Error(`${file}: ${n} f32x4.fma rewritten, expected at least ${min}`);
if (nDot < minDot) throw new Error(`${file}: ${nDot} f32x4.fms rewritten, expected at least ${minDot}`);
fs.writeFileSync(file, bytes);
console.log(`${file}: ${n} f32x4.fma -> f32x4.relaxed_madd, ${nDot} f32x4.fms -> i32x4.relaxed_dot_i8x16_i7x16_add_s`);
