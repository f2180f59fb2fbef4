// onnxruntime-node (bench/node_modules) runs each QDQ graph tests/quant_static/run.py had lithe write
// (lithe quantize --calibrate):  node ort.mjs DIR
// DIR/cases.txt lists NAME; reads DIR/NAME.onnx and NAME.x.npy (<f4), writes NAME.y.npy with graph
// optimizations disabled (QuantizeLinear / DequantizeLinear and the float ops as the ONNX spec defines
// them) and NAME.yopt.npy with them all on (its fused int8 kernels: on an AVX2 host without VNNI its
// u8 x s8 vpmaddubsw pairs saturate, as onnxruntime documents, so those differ by ~1e-2).
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const here = path.dirname(new URL(import.meta.url).pathname);
const require = createRequire(path.join(here, '../../bench/package.json'));
const ort = require('onnxruntime-node');

function readNpy(file) {
  const b = fs.readFileSync(file);
  const hlen = b[6] === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const start = b[6] === 1 ? 10 : 12;
  const header = b.subarray(start, start + hlen).toString('latin1');
  if (!/'descr':\s*'<f4'/.test(header)) throw new Error(`${file}: not <f4`);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  const raw = b.subarray(start + hlen);
  return { shape, data: new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength)) };
}

function writeNpy(file, dims, data) {
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${dims.join(', ')}${dims.length === 1 ? ',' : ''}), }`;
  while ((10 + header.length + 1) % 64) header += ' ';
  header += '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'), Buffer.from(new Float32Array(data).buffer)]));
}

const dir = process.argv[2];
const names = fs.readFileSync(path.join(dir, 'cases.txt'), 'utf8').split('\n').filter(Boolean);
for (const name of names) {
  const x = readNpy(path.join(dir, `${name}.x.npy`));
  for (const [level, suffix] of [['disabled', 'y'], ['all', 'yopt']]) {
    const opts = { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: level };
    const session = await ort.InferenceSession.create(path.join(dir, `${name}.onnx`), opts);
    const out = (await session.run({ [session.inputNames[0]]: new ort.Tensor('float32', x.data, x.shape) }))[session.outputNames[0]];
    writeNpy(path.join(dir, `${name}.${suffix}.npy`), out.dims, out.data);
  }
}
console.log(`quant_static ort: ${names.length} graphs run by onnxruntime-node`);
