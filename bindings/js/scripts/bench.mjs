// Throughput of the package in Node: training examples/s (batch 128, Adam) and batch-1 predict
// latency, for the build init() picks or, with --scalar, the scalar one. Compare with the native
// command on the same machine: lithe train-mnist --limit 6400 --epochs 1 (its "examples/s").
//   node scripts/bench.mjs MODEL.lithe [--scalar] [--steps N]
import fs from 'node:fs';
import zlib from 'node:zlib';
import * as lithe from '../src/index.js';

const args = process.argv.slice(2);
const modelPath = args.find((a) => !a.startsWith('--'));
if (!modelPath) {
  console.error('usage: node scripts/bench.mjs MODEL.lithe [--scalar] [--steps N]');
  process.exit(2);
}
const steps = Number(args[args.indexOf('--steps') + 1]) || 50;
const t0 = performance.now();
const info = await lithe.init(args.includes('--scalar') ? { simd: false } : {});
const model = await lithe.load(modelPath);
const first = model.predict(new Float32Array(784), [1, 784]);
const startMs = performance.now() - t0;
const dir = '/usr/share/datasets/fashion-mnist';
const img = zlib.gunzipSync(fs.readFileSync(`${dir}/train-images-idx3-ubyte.gz`));
const lab = zlib.gunzipSync(fs.readFileSync(`${dir}/train-labels-idx1-ubyte.gz`));
const B = 128, D = 784;
const nOut = first.shape[1];

const lat = [];
for (let i = 0; i < 200; i++) {
  const x = Float32Array.from(img.subarray(16 + i * D, 16 + (i + 1) * D), (v) => v / 255);
  const t = performance.now();
  model.predict(x, [1, D]);
  lat.push(performance.now() - t);
}
lat.sort((a, b) => a - b);

const opt = lithe.adam({ learnRate: 0.001 });
const x = new Float32Array(B * D), y = new Int32Array(B);
let t = 0;
for (let s = 0; s < steps + 3; s++) {
  for (let r = 0; r < B; r++) {
    const k = (s * B + r) % 60000;
    for (let j = 0; j < D; j++) x[r * D + j] = img[16 + k * D + j] / 255;
    y[r] = lab[8 + k] % nOut;
  }
  const t1 = performance.now();
  model.trainStep({ x: lithe.tensor(x, [B, D]), y: lithe.tensor(y, [B]), optimizer: opt });
  if (s >= 3) t += performance.now() - t1; // the first steps allocate the optimizer state
}
console.log(`${info.simd ? 'simd' : 'scalar'}: init+load+first prediction ${startMs.toFixed(1)} ms; ` +
  `predict batch 1 median ${lat[100].toFixed(3)} ms; train ${((steps * B) / (t / 1000)).toFixed(0)} examples/s (batch ${B}, ${steps} steps)`);
model.dispose();
opt.dispose();
