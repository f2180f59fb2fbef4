// "Any standard WASI runtime runs the same lithe.wasm": the WASI command, built by the wasi
// preset, under a second, independent WASI implementation — @bjorn3/browser_wasi_shim, the
// pure-JavaScript one web pages use, with an in-memory file system — gives the native command's
// output and predictions. LITHE_NATIVE / LITHE_WASI name the two builds.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { WASI, File, OpenFile, ConsoleStdout, PreopenDirectory } from '@bjorn3/browser_wasi_shim';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const native = path.resolve(repo, process.env.LITHE_NATIVE ?? 'build/ci/tools/lithe/lithe');
const wasmPath = path.resolve(repo, process.env.LITHE_WASI ?? 'build/wasi/tools/lithe/lithe.wasm');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'lithe-shim-'));
let module;

// Runs lithe.wasm with `files` (name -> bytes) in a preopened in-memory ".", returning the exit
// code, stdout, stderr and the directory's files afterwards.
function runShim(args, files) {
  const out = [], err = [];
  const dir = new PreopenDirectory('.', new Map(Object.entries(files).map(([k, v]) => [k, new File(v)])));
  const wasi = new WASI(['lithe', ...args], [], [new OpenFile(new File([])), ConsoleStdout.lineBuffered((l) => out.push(l)),
    ConsoleStdout.lineBuffered((l) => err.push(l)), dir]);
  const inst = new WebAssembly.Instance(module, { wasi_snapshot_preview1: wasi.wasiImport });
  const code = wasi.start(inst);
  const after = Object.fromEntries([...dir.dir.contents].map(([k, v]) => [k, v.data]));
  return { code, stdout: out.join('\n'), stderr: err.join('\n'), files: after };
}

function npyF32(bytes) {
  const b = Buffer.from(bytes);
  const hl = b.readUInt16LE(8);
  const body = b.subarray(10 + hl);
  return new Float32Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength));
}

before(() => {
  assert.ok(fs.existsSync(wasmPath), `build the wasi preset first: ${wasmPath}`);
  module = new WebAssembly.Module(fs.readFileSync(wasmPath));
  const r = spawnSync(native, ['train-mnist', '--epochs', '1', '--limit', '2000', '--save', 'model.lithe'], { cwd: work, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  // 32 test images as a float32 .npy, written by numpy's rules (header padded to 64 bytes)
  const img = zlib.gunzipSync(fs.readFileSync('/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz')).subarray(16, 16 + 32 * 784);
  let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (32, 784), }";
  header += ' '.repeat(64 - ((10 + header.length + 1) % 64)) + '\n';
  const h = Buffer.alloc(10);
  h.write('\x93NUMPY', 0, 'latin1');
  h[6] = 1;
  h.writeUInt16LE(header.length, 8);
  const x = Float32Array.from(img, (v) => v / 255);
  fs.writeFileSync(path.join(work, 'x.npy'), Buffer.concat([h, Buffer.from(header, 'latin1'), Buffer.from(x.buffer)]));
  const r2 = spawnSync(native, ['run', 'model.lithe', '--input', 'x.npy', '--output', 'y.npy'], { cwd: work, encoding: 'utf8' });
  assert.equal(r2.status, 0, r2.stderr);
});
after(() => fs.rmSync(work, { recursive: true, force: true }));

test('lithe.wasm under browser_wasi_shim: info and run as native, files in memory', () => {
  const model = fs.readFileSync(path.join(work, 'model.lithe'));
  const info = runShim(['info', 'model.lithe'], { 'model.lithe': model });
  assert.equal(info.code, 0, info.stderr);
  const nativeInfo = spawnSync(native, ['info', 'model.lithe'], { cwd: work, encoding: 'utf8' }).stdout;
  assert.equal(info.stdout, nativeInfo.replace(/\n$/, ''));

  const run = runShim(['run', 'model.lithe', '--input', 'x.npy', '--output', 'y.npy'],
    { 'model.lithe': model, 'x.npy': fs.readFileSync(path.join(work, 'x.npy')) });
  assert.equal(run.code, 0, run.stderr);
  assert.ok(run.files['y.npy'], `y.npy written (files: ${Object.keys(run.files)})`);
  const mine = npyF32(run.files['y.npy']), theirs = npyF32(fs.readFileSync(path.join(work, 'y.npy')));
  assert.equal(mine.length, 32 * 10);
  let worst = 0;
  for (let i = 0; i < mine.length; i++) worst = Math.max(worst, Math.abs(mine[i] - theirs[i]));
  assert.ok(worst <= 1e-6, `largest difference from native ${worst}`);
});

test('lithe.wasm under browser_wasi_shim: a missing file is an error, not a trap', () => {
  const r = runShim(['info', 'missing.lithe'], {});
  assert.equal(r.code, 1);
  assert.match(r.stderr, /LITHE_ERR_IO.*missing\.lithe/);
});
