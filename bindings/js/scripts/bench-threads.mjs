// 1 thread against N on the threads module, interleaved in one process so that both see the same
// machine load: MLP predict (batch 1 and 64) and a training step (batch 128, Adam), the minimum of
// many runs of each (on a shared machine the minimum is the least disturbed figure), by the wall
// clock and by the process's CPU time (all threads): on a loaded machine the wall clock of one
// thread stretches with preemption, while the CPU time says whether threads add work. Then, for
// the batch-1 predict on N threads, how often the workers took part (ran any of its pool jobs'
// ranges: lithe_js_thread_ranges) and the time of those predicts against the others': on a busy
// host a worker off its core misses jobs and the caller computes them all, so the N-thread
// figure is a mix of the two whose weights are the host's load, not the pool's.
//   node scripts/bench-threads.mjs MODEL.lithe [--threads N] [--rounds R]
import fs from 'node:fs';
import zlib from 'node:zlib';
import * as lithe from '../src/index.js';

const args = process.argv.slice(2);
const modelPath = args.find((a) => !a.startsWith('--') && !/^\d+$/.test(a));
const opt = (name, dflt) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : dflt);
const N = opt('--threads', 2), rounds = opt('--rounds', 20);
const info = await lithe.init({ threads: N });
if (info.threads !== N) throw new Error(`asked for ${N} threads, got ${info.threads} (${info.build})`);
const r = lithe.c();
const name = r.allocString('cpu');
r.check(r.lithe_backend_get(name, r.outPtr(0)));
const cpu = r.readU32(r.outPtr(0));

const model = await lithe.load(modelPath);
const img = zlib.gunzipSync(fs.readFileSync('/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz'));
const lab = zlib.gunzipSync(fs.readFileSync('/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz'));
const D = 784, nOut = model.predict(new Float32Array(D), [1, D]).shape[1];
const x = (B, at = 0) => Float32Array.from(img.subarray(16 + at * D, 16 + (at + B) * D), (v) => v / 255);
const x1 = x(1), x64 = x(64), x128 = x(128, 64);
const y128 = Int32Array.from(lab.subarray(8 + 64, 8 + 192), (v) => v % nOut);
const opt_ = lithe.adam({ learnRate: 0.0001 });
const best = {}, bestCpu = {};
const time = (key, fn, reps) => {
  for (let i = 0; i < reps; i++) {
    const c = process.cpuUsage(), t = performance.now();
    fn();
    const dt = performance.now() - t, dc = process.cpuUsage(c);
    best[key] = Math.min(best[key] ?? Infinity, dt);
    bestCpu[key] = Math.min(bestCpu[key] ?? Infinity, (dc.user + dc.system) / 1000);
  }
};
for (let round = 0; round < rounds; round++)
  for (const t of [1, N]) {
    r.check(r.lithe_backend_set_threads(cpu, t));
    time(`b1/${t}`, () => model.predict(x1, [1, D]), 20);
    time(`b64/${t}`, () => model.predict(x64, [64, D]), 5);
    time(`train/${t}`, () => model.trainStep({ x: lithe.tensor(x128, [128, D]), y: lithe.tensor(y128, [128]), optimizer: opt_ }), 2);
  }
// batch 1 on N threads, predict by predict: with the workers taking part or without
r.check(r.lithe_backend_set_threads(cpu, N));
const split = { with: [], without: [] };
for (let i = 0; i < rounds * 100; i++) {
  const before = r.lithe_js_thread_ranges(), t = performance.now();
  model.predict(x1, [1, D]);
  const dt = performance.now() - t;
  split[r.lithe_js_thread_ranges() > before ? 'with' : 'without'].push(dt);
}
const f = (v) => v.toFixed(3).padStart(8);
const row = (label, key) => `${label.padEnd(30)} wall ${f(best[`${key}/1`])} ms ${f(best[`${key}/${N}`])} ms  x${(best[`${key}/1`] / best[`${key}/${N}`]).toFixed(2)}` +
  `   CPU ${f(bestCpu[`${key}/1`])} ms ${f(bestCpu[`${key}/${N}`])} ms`;
console.log(`threads module, min of ${rounds} rounds: 1 thread vs ${N} (wall clock, then CPU time of all threads)`);
console.log(row('predict, batch 1', 'b1'));
console.log(row('predict, batch 64', 'b64'));
console.log(row('train step, batch 128 (Adam)', 'train'));
const stats = (a) => {
  a.sort((p, q) => p - q);
  return a.length ? `min ${f(a[0])} ms, median ${f(a[a.length >> 1])} ms` : '(none)';
};
const n1 = split.with.length + split.without.length;
console.log(`predict, batch 1, ${N} threads: workers took part in ${split.with.length} of ${n1} (${(100 * split.with.length / n1).toFixed(0)} %): ` +
  `${stats(split.with)}; without them: ${stats(split.without)}`);
model.dispose();
opt_.dispose();
