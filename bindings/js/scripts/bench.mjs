// Throughput of the package in Node: training examples/s (batch 128, Adam), batch-1 and batch-64
// predict latency, for the build init() picks or, with --scalar, the scalar one. Compare with the native
// command on the same machine: lithe train-mnist --limit 6400 --epochs 1 (its "examples/s").
// --threads N: threads in all (N > 1: the threads module with N - 1 worker threads; default 1 here,
// so that figures compare with earlier ones). Wall-clock minima are printed too: on a shared
// machine the minimum is the figure least disturbed by other processes.
//   node scripts/bench.mjs MODEL.lithe [--scalar] [--steps N] [--threads N]
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
const threads = args.includes('--threads') ? Number(args[args.indexOf('--threads') + 1]) : 1;
const info = await lithe.init(args.includes('--scalar') ? { simd: false, threads } : { threads });
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
// Batch-64 inference (the MLP row of bench/'s table): median of 100 after 10 warm-ups, by the
// wall clock and by the process's CPU time (on a shared machine the wall clock also counts the
// time other processes hold the core).
const x64 = new Float32Array(64 * D);
for (let i = 0; i < x64.length; i++) x64[i] = img[16 + i] / 255;
const lat64 = [], cpu64 = [];
for (let i = 0; i < 110; i++) {
  const t = performance.now(), c = process.cpuUsage();
  model.predict(x64, [64, D]);
  const dc = process.cpuUsage(c);
  if (i >= 10) lat64.push(performance.now() - t), cpu64.push((dc.user + dc.system) / 1000);
}
lat64.sort((a, b) => a - b);
cpu64.sort((a, b) => a - b);

const opt = lithe.adam({ learnRate: 0.001 });
const x = new Float32Array(B * D), y = new Int32Array(B);
let t = 0, stepMin = Infinity;
for (let s = 0; s < steps + 3; s++) {
  for (let r = 0; r < B; r++) {
    const k = (s * B + r) % 60000;
    for (let j = 0; j < D; j++) x[r * D + j] = img[16 + k * D + j] / 255;
    y[r] = lab[8 + k] % nOut;
  }
  const t1 = performance.now();
  model.trainStep({ x: lithe.tensor(x, [B, D]), y: lithe.tensor(y, [B]), optimizer: opt });
  const dt = performance.now() - t1;
  if (s >= 3) t += dt, stepMin = Math.min(stepMin, dt); // the first steps allocate the optimizer state
}
console.log(`${info.build}, ${info.threads} thread(s): init+load+first prediction ${startMs.toFixed(1)} ms; ` +
  `predict batch 1 median ${lat[100].toFixed(3)} ms, batch 64 median ${lat64[50].toFixed(3)} ms (min ${lat64[0].toFixed(3)}; CPU time median ${cpu64[50].toFixed(3)}); train ${((steps * B) / (t / 1000)).toFixed(0)} examples/s (batch ${B}, ${steps} steps; step min ${stepMin.toFixed(2)} ms)`);
model.dispose();
opt.dispose();
