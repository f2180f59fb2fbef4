// A fixed number of predict calls in lithe's npm package, for instruction counts that a loaded host
// does not disturb (bench/quant/wasm_speed.py's timings are minimums of a shared host):
//   valgrind --tool=cachegrind --smc-check=all node --no-liftoff bench/quant/wasm_count.mjs CORE.wasm MODEL.onnx X.npy N
// The difference of two counts (N = a, b) over b - a is one predict's instructions (the x86-64 code
// V8's optimizing compiler made of the module; --no-liftoff: no baseline tier in the count).
import fs from 'node:fs';
import path from 'node:path';
import * as lithe from '../../bindings/js/src/index.js';
import { npyRead } from '../runners/common.mjs';

const [wasm, model, xfile, n] = process.argv.slice(2);
const importers = path.join(path.dirname(wasm), wasm.includes('relaxed') ? 'lithe-importers-relaxed-simd.wasm'
  : wasm.includes('scalar') ? 'lithe-importers.wasm' : 'lithe-importers-simd.wasm');
await lithe.init({ wasm: fs.readFileSync(wasm), simd: !wasm.includes('scalar'), threads: 1,
                   ...(fs.existsSync(importers) ? { importers: fs.readFileSync(importers) } : {}) });
const m = lithe.loadBytes(fs.readFileSync(model));
const x = npyRead(xfile);
const xt = lithe.tensor(x.data, x.shape);
let s = 0;
for (let i = 0; i < Number(n); i++) s += m.predict(xt).data[0];
console.log(`predicts=${n} y0sum=${s}`);
process.exit(0);
