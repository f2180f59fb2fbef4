// onnxruntime-node (bench/package.json's, the version bench/ pins) runs every model lithe exported
// and compares with lithe's prediction after fine-tuning:
//   node ort.mjs DIR     (DIR/cases.txt lists <name>; DIR/<name>.onnx, .in.npy, .out.npy)
// Passes when max |onnxruntime - lithe| <= 1e-5 * max |onnxruntime| for every case; prints one line
// per case and "ort: ok N" at the end. onnxruntime-node resolves from bench/node_modules.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const here = path.dirname(new URL(import.meta.url).pathname);
const require = createRequire(path.join(here, '../../bench/package.json'));
const ort = require('onnxruntime-node');

// A .npy file (version 1-3, little-endian <f4 / <i8, C order) as {dtype, shape, data}.
function readNpy(file) {
  const b = fs.readFileSync(file);
  const major = b[6];
  const hlen = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = b.subarray(start, start + hlen).toString('latin1');
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: Fortran order`);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  const raw = b.subarray(start + hlen);
  const copy = raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength);
  if (descr === '<f4') return { dtype: 'float32', shape, data: new Float32Array(copy) };
  if (descr === '<i8') return { dtype: 'int64', shape, data: new BigInt64Array(copy) };
  throw new Error(`${file}: dtype ${descr}`);
}

const dir = process.argv[2];
const names = fs.readFileSync(path.join(dir, 'cases.txt'), 'utf8').split('\n').filter(Boolean);
let failed = 0;
for (const name of names) {
  const x = readNpy(path.join(dir, `${name}.in.npy`));
  const want = readNpy(path.join(dir, `${name}.out.npy`));
  try {
    const session = await ort.InferenceSession.create(path.join(dir, `${name}.onnx`));
    const feeds = { [session.inputNames[0]]: new ort.Tensor(x.dtype, x.data, x.shape) };
    const out = (await session.run(feeds))[session.outputNames[0]];
    const same = out.dims.length === want.shape.length && out.dims.every((d, i) => d === want.shape[i]);
    let diff = 0, scale = 0;
    for (let i = 0; i < want.data.length; i++) {
      diff = Math.max(diff, Math.abs(out.data[i] - want.data[i]));
      scale = Math.max(scale, Math.abs(out.data[i]));
    }
    const ok = same && diff <= 1e-5 * scale && Number.isFinite(diff);
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}: max |ort - lithe| = ${diff.toExponential(2)}, max |ort| = ${scale.toExponential(2)}${same ? '' : ` (shape ${out.dims} vs ${want.shape})`}`);
    if (!ok) failed++;
  } catch (e) {
    console.log(`FAIL ${name}: ${e.message}`);
    failed++;
  }
}
if (failed) {
  console.log(`ort: ${failed} of ${names.length} failed`);
  process.exit(1);
}
console.log(`ort: ok ${names.length}`);
