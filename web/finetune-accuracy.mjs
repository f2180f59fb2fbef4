#!/usr/bin/env node
// The accuracy of the fine-tuning demo's three modes (issue 26: LoRA rank 8 and last-layer
// fine-tuning each within 2 points of full fine-tuning on held-out images), measured with the
// page's own recipe: web/finetune-core.js's fineTune, run here in Node through the npm package.
// The base (make-cnn.mjs) knows eight Fashion-MNIST classes; each mode adds Bag and Ankle boot and
// fine-tunes on test images 0..4999 (all ten classes); the figures are on images 5000..9999.
// Usage: node web/finetune-accuracy.mjs [--model build/web/fashion-cnn8.lithe] [--steps N]
//   [--seeds 1,2,3] [--modes full,last,lora] [--json PATH]
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import * as lithe from '../bindings/js/src/index.js';
import { MODES, RECIPE, fineTune, evaluate, idxPayload, split } from './finetune-core.js';

const webDir = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const modelPath = path.resolve(opt('--model', path.join(webDir, '../build/web/fashion-cnn8.lithe')));
if (!fs.existsSync(modelPath)) {
  const r = spawnSync(process.execPath, [path.join(webDir, 'make-cnn.mjs'), '--out', modelPath], { stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
const steps = Number(opt('--steps', RECIPE.steps));
const seeds = opt('--seeds', String(RECIPE.seed)).split(',').map(Number);
const modes = opt('--modes', Object.keys(MODES).join(',')).split(',');
const lrs = Object.fromEntries(modes.map((m) => [m, Number(opt(`--lr-${m}`, MODES[m].lr))]));
const dataDir = '/usr/share/datasets/fashion-mnist';
const read = (f) => idxPayload(zlib.gunzipSync(fs.readFileSync(path.join(dataDir, f))));

await lithe.init({ threads: 1 });
const images = read('t10k-images-idx3-ubyte.gz'), labels = read('t10k-labels-idx1-ubyte.gz');
const base = new Uint8Array(fs.readFileSync(modelPath));
const { pool, heldout } = split();
const pct = (v) => (100 * v).toFixed(2);
const results = {};
for (const mode of modes) {
  const runs = [];
  for (const seed of seeds) {
    let last = null;
    const t0 = performance.now();
    const model = fineTune(lithe, base, images, labels, pool, { mode, steps, seed, lr: lrs[mode], onStep: (s, loss, mem) => { last = { loss, ...mem }; } });
    const secs = (performance.now() - t0) / 1000;
    runs.push({ seed, seconds: secs, ...evaluate(lithe, model, images, labels, heldout), plan: last.plan.total, peak: last.measured.peak,
      wasm: last.measured.wasm, adapters: mode === 'lora' ? model.saveLora().byteLength : 0 });
    model.dispose();
  }
  const mean = (k) => runs.reduce((s, r) => s + r[k], 0) / runs.length;
  results[mode] = { lr: lrs[mode], runs, acc: mean('acc'), oldAcc: mean('oldAcc'), newAcc: mean('newAcc'), plan: runs[0].plan, peak: runs[0].peak, wasm: runs[0].wasm, adapters: runs[0].adapters };
  const r = results[mode];
  console.log(`${mode.padEnd(5)} lr ${r.lr}: held-out accuracy ${pct(r.acc)}% (old 8 classes ${pct(r.oldAcc)}%, new 2 ${pct(r.newAcc)}%)` +
    ` [${runs.map((x) => pct(x.acc)).join(', ')}]; step plan ${(r.plan / 1024).toFixed(0)} KiB, backend peak ${(r.peak / 1024).toFixed(0)} KiB` +
    `${r.adapters ? `; adapters ${r.adapters} B` : ''}; ${runs[0].seconds.toFixed(1)} s`);
}
if (results.full) {
  for (const m of ['last', 'lora'].filter((k) => results[k])) {
    const gap = 100 * (results.full.acc - results[m].acc);
    console.log(`${m}: ${gap.toFixed(2)} points below full fine-tuning (bar: 2) — ${gap <= 2 ? 'within' : 'OVER'}`);
  }
}
const json = opt('--json', null);
if (json) fs.writeFileSync(json, JSON.stringify({ steps, seeds, batch: RECIPE.batch, results }, null, 1));
