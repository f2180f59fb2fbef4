// Shared fixtures for the package tests: a model trained by the *native* lithe command and its
// native predictions (the oracle; never the wasm under test). LITHE_NATIVE names the native
// command (test.sh sets it); otherwise the repository's build/ci or build/default one is used.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';

export const pkgDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const repoDir = path.resolve(pkgDir, '../..');

export function findNative() {
  const cands = [process.env.LITHE_NATIVE, 'build/ci/tools/lithe/lithe', 'build/default/tools/lithe/lithe'].filter(Boolean);
  for (const c of cands) {
    const p = path.resolve(repoDir, c);
    if (fs.existsSync(p)) return p;
  }
  throw new Error('the native lithe command is needed for the goldens: build the ci preset or set LITHE_NATIVE');
}

export function npyWrite(file, shape, f32) {
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const h = Buffer.alloc(10);
  h.write('\x93NUMPY', 0, 'latin1');
  h[6] = 1;
  h.writeUInt16LE(header.length, 8);
  fs.writeFileSync(file, Buffer.concat([h, Buffer.from(header, 'latin1'), Buffer.from(f32.buffer, f32.byteOffset, f32.byteLength)]));
}
export function npyRead(file) {
  const b = fs.readFileSync(file);
  const hl = b.readUInt16LE(8);
  const header = b.subarray(10, 10 + hl).toString('latin1');
  const shape = header.match(/'shape': \(([^)]*)\)/)[1].split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  const body = b.subarray(10 + hl);
  return { shape, data: new Float32Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength)) };
}

// Fashion-MNIST test images [start, start + n) scaled to [0, 1] and their labels.
export function fashion(n, start = 0, split = 't10k') {
  const dir = '/usr/share/datasets/fashion-mnist';
  const img = zlib.gunzipSync(fs.readFileSync(`${dir}/${split}-images-idx3-ubyte.gz`));
  const lab = zlib.gunzipSync(fs.readFileSync(`${dir}/${split}-labels-idx1-ubyte.gz`));
  const x = Float32Array.from(img.subarray(16 + start * 784, 16 + (start + n) * 784), (v) => v / 255);
  const y = Int32Array.from(lab.subarray(8 + start, 8 + start + n));
  return { x, y };
}

// A small model trained natively, 64 test images, and the native predictions for them.
export function nativeFixture() {
  const native = findNative();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'lithe-js-'));
  const run = (args) => {
    const r = spawnSync(native, args, { cwd: work, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${native} ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  run(['train-mnist', '--epochs', '1', '--limit', '2000', '--batch-size', '64', '--save', 'model.lithe']);
  const { x, y } = fashion(64);
  npyWrite(path.join(work, 'x.npy'), [64, 784], x);
  run(['run', 'model.lithe', '--input', 'x.npy', '--output', 'y.npy']);
  return {
    native, work, run, x, labels: y,
    modelBytes: new Uint8Array(fs.readFileSync(path.join(work, 'model.lithe'))),
    golden: npyRead(path.join(work, 'y.npy')),
    cleanup: () => fs.rmSync(work, { recursive: true, force: true }),
  };
}

export function maxAbsDiff(a, b) {
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}
