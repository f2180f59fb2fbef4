// One WebAssembly latency measurement in Node (bench/quant/wasm_speed.py runs these interleaved):
// lithe's npm package (a core .wasm and its importer module beside it) or onnxruntime-web's wasm EP
// (SIMD, one thread) on one ONNX file at the input's batch; prints one JSON line with common.mjs's
// measure statistics (warm-up, then >= 30 runs) and the output's first values.
//   node bench/quant/wasm_time.mjs lithe MODEL.onnx X.npy --wasm build/wasm-simd/bindings/js/lithe-simd.wasm [--max-s S]
//   node bench/quant/wasm_time.mjs ort-web MODEL.onnx X.npy [--max-s S]
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { npyRead, measure, pkgVersion } from '../runners/common.mjs';

const [runner, model, xfile, ...rest] = process.argv.slice(2);
const opt = (k, d) => (rest.includes(k) ? rest[rest.indexOf(k) + 1] : d);
const maxS = Number(opt('--max-s', 10));
const x = npyRead(xfile);
let run, name;
if (runner === 'lithe') {
  const lithe = await import('../../bindings/js/src/index.js');
  const wasm = opt('--wasm');
  const importers = path.join(path.dirname(wasm), wasm.includes('relaxed') ? 'lithe-importers-relaxed-simd.wasm'
    : wasm.includes('scalar') ? 'lithe-importers.wasm' : 'lithe-importers-simd.wasm');
  await lithe.init({ wasm: fs.readFileSync(wasm), simd: !wasm.includes('scalar'), threads: 1,
                     ...(fs.existsSync(importers) ? { importers: fs.readFileSync(importers) } : {}) });
  const m = lithe.loadBytes(fs.readFileSync(model));
  const xt = lithe.tensor(x.data, x.shape);
  run = () => m.predict(xt).data;
  name = `lithe npm (${path.basename(wasm)})`;
} else {
  const ort = createRequire(import.meta.url)('onnxruntime-web');
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.simd = true;
  const sess = await ort.InferenceSession.create(model, { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
  const feeds = { [sess.inputNames[0]]: new ort.Tensor('float32', x.data, x.shape) };
  run = async () => (await sess.run(feeds))[sess.outputNames[0]].getData();
  name = `onnxruntime-web ${pkgVersion('onnxruntime-web')} (wasm EP, SIMD, 1 thread)`;
}
let y;
const st = await measure(async () => { y = await run(); }, { maxS });
console.log(JSON.stringify({ runner: name, model, batch: x.shape[0], ...st, y0: Array.from(y.slice(0, 10)) }));
process.exit(0);
