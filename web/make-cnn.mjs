#!/usr/bin/env node
// The fine-tuning demo's base model: a small CNN (web/finetune-core.js) trained by lithe — the npm
// package, in Node — on the eight Fashion-MNIST classes other than Bag and Ankle boot (Debian's
// dataset-fashion-mnist, the 60,000 training images). The page (finetune.html) then teaches it
// those two. serve.mjs runs this when build/web/fashion-cnn8.lithe is missing.
// Usage: node web/make-cnn.mjs [--out PATH] [--steps N] [--batch N] [--seed N]
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';
import * as lithe from '../bindings/js/src/index.js';
import { buildBase, trainBase, evaluate, idxPayload, OLD } from './finetune-core.js';

const webDir = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const out = path.resolve(opt('--out', path.join(webDir, '../build/web/fashion-cnn8.lithe')));
const steps = Number(opt('--steps', 1500)), batch = Number(opt('--batch', 64)), seed = Number(opt('--seed', 0));
const dataDir = opt('--data', '/usr/share/datasets/fashion-mnist');
const read = (f) => idxPayload(zlib.gunzipSync(fs.readFileSync(path.join(dataDir, f))));

const info = await lithe.init({ threads: Number(opt('--threads', 1)) });
const images = read('train-images-idx3-ubyte.gz'), labels = read('train-labels-idx1-ubyte.gz');
const model = await buildBase(lithe, seed);
const t0 = performance.now();
let avg = 0;
trainBase(lithe, model, images, labels, { steps, batch, seed, onStep: (s, loss) => {
  avg = s ? 0.98 * avg + 0.02 * loss : loss;
  if (s % 100 === 99 || s === steps - 1) console.log(`make-cnn: step ${s + 1}/${steps}, loss ${avg.toFixed(4)}`);
} });
const secs = (performance.now() - t0) / 1000;
const ti = read('t10k-images-idx3-ubyte.gz'), tl = read('t10k-labels-idx1-ubyte.gz');
const known = [];
for (let k = 5000; k < 10000; k++) if (tl[k] < OLD) known.push(k);
const { acc } = evaluate(lithe, model, ti, tl, known);
fs.mkdirSync(path.dirname(out), { recursive: true });
const bytes = model.save();
fs.writeFileSync(out, bytes);
console.log(`make-cnn: ${model.name}, ${steps} steps of ${batch} in ${secs.toFixed(1)} s (${info.build}, ${info.threads} thread(s)); ` +
  `held-out accuracy on the ${OLD} classes ${(100 * acc).toFixed(1)}%; ${bytes.length} bytes -> ${out}`);
model.dispose();
