// lithe's npm package (bindings/js) in Node: its SIMD128 build (Emscripten, wasm-simd preset)
// unless --scalar. Inference on the suite's ONNX files (the graph layer) and on mlp.lithe (the
// MLP as lithe's own chain(Relu, Relu, Softmax)); latency = model.predict(x) including the copy
// of x in and of the output back (results are JS copies). Training: mlp.lithe, trainStep with
// categorical cross-entropy and Adam, as natively: Thinc's defaults (gradClip 1.0, averages), and
// Adam doing torch.optim.Adam's (and tfjs's) work: no clipping, no averages, no L2. --train-workloads
// adds the classifiers of make_models.py's TRAIN (the CNN at batch 32: cnn_train_b32.onnx).
//   node lithe_js.mjs --dir BUILD/bench --wasm lithe-simd.wasm [--quick] [--workloads a,b] [--only infer,train]
//   node lithe_js.mjs --dir BUILD/bench --wasm lithe-simd-threads.wasm --threads 2 ...
//                     [--train-workloads mlp_train_b64,cnn_train_b32]
import fs from 'node:fs';
import path from 'node:path';
import * as lithe from '../../bindings/js/src/index.js';
import { npyRead, maxAbsErr, measure, emit } from './common.mjs';

const argv = process.argv.slice(2);
const wasmAt = argv.indexOf('--wasm');
const wasm = wasmAt >= 0 ? argv.splice(wasmAt, 2)[1] : undefined;
const { parseArgs, WORKLOADS } = await import('./common.mjs');
const o = parseArgs(argv);
// the importer module (ONNX, TF.js) beside the core it was built with (bindings/js/src/loader.js)
const importersAt = wasm ? path.join(path.dirname(wasm), wasm.includes('scalar') ? 'lithe-importers.wasm' : 'lithe-importers-simd.wasm') : undefined;
// --threads N > 1: the threads module (lithe-simd-threads.wasm, importers built in) with N - 1
// worker_threads, as a cross-origin isolated page runs it with Web Workers
const info = await lithe.init(wasm ? { wasm: fs.readFileSync(wasm), simd: !wasm.includes('scalar'), threads: o.threads,
  ...(o.threads === 1 && fs.existsSync(importersAt) ? { importers: fs.readFileSync(importersAt) } : {}) } : { threads: o.threads });
if (info.threads !== o.threads) throw new Error(`asked for ${o.threads} threads, the ${info.build} module runs ${info.threads}`);
const name = `lithe ${lithe.version()} (npm, ${info.build === 'simd-threads' ? 'SIMD128 threads' : lithe.usingSimd() ? 'SIMD128' : 'scalar'} wasm)`;

const workloads = [];
for (const wl of o.workloads ?? Object.keys(WORKLOADS)) {
  workloads.push([wl, `${WORKLOADS[wl]}.onnx`, `${wl}_ref.npy`, 'graph layer (.onnx)']);
  if (WORKLOADS[wl] === 'mlp') workloads.push([wl, 'mlp.lithe', `${wl}_softmax_ref.npy`, 'native layers (mlp.lithe)']);
}
const groups = o.only ?? ['infer', 'train'];
if (groups.includes('infer')) {
  for (const [wl, file, refFile, how] of workloads) {
    const rec = { group: 'infer', workload: wl, runner: name, impl: 'wasm', threads: o.threads, config: how };
    try {
      const model = lithe.loadBytes(fs.readFileSync(path.join(o.dir, file)));
      const x = npyRead(path.join(o.dir, `${wl}_x.npy`));
      const ref = npyRead(path.join(o.dir, refFile));
      const xt = lithe.tensor(x.data, x.shape);
      let y;
      const st = await measure(() => { y = model.predict(xt).data; }, o);
      emit({ ...rec, ...st, ...maxAbsErr(y, ref.data),
             ref: file.endsWith('.lithe') ? 'softmax(torch logits), same weights' : 'torch output, same ONNX file' });
      model.dispose();
    } catch (e) {
      emit({ ...rec, error: String(e.message ?? e).split('\n')[0] });
    }
  }
}
// the configs' names as bench/run.py's TRAIN_ADAM gives them
const ADAM = [['Adam (Thinc defaults: grad_clip 1, averages)', {}],
              ["Adam as PyTorch's work (no clip, no averages, no L2)", { gradClip: 0, useAverages: false, L2: 0 }]];
// the MLP (mlp.lithe; train_x / train_y) and make_models.py's TRAIN rows (<wl>.onnx, ending in
// softmax, with <wl>_x / <wl>_y), each with both Adams
const trainFiles = { mlp_train_b64: ['mlp.lithe', 'train_x.npy', 'train_y.npy'] };
for (const wl of o.trainWorkloads ?? ['mlp_train_b64'])
  trainFiles[wl] ??= [`${wl}.onnx`, `${wl}_x.npy`, `${wl}_y.npy`];
for (const wl of groups.includes('train') ? o.trainWorkloads ?? ['mlp_train_b64'] : []) {
  const [file, xFile, yFile] = trainFiles[wl];
  for (const [adamName, adamOpts] of ADAM) {
    const rec = { group: 'train', workload: wl, runner: name, impl: 'wasm', threads: o.threads,
                  config: `${file.endsWith('.lithe') ? 'mlp.lithe' : 'graph layer (.onnx)'}, categorical cross-entropy, ${adamName}` };
    try {
      const model = lithe.loadBytes(fs.readFileSync(path.join(o.dir, file)));
      const x = npyRead(path.join(o.dir, xFile));
      const y = npyRead(path.join(o.dir, yFile));
      const xt = lithe.tensor(x.data, x.shape), yt = lithe.tensor(y.data, y.shape);
      const p = model.predict(xt).data;
      const B = y.shape[0], C = p.length / B;
      let first = 0;
      for (let r = 0; r < B; r++) first -= Math.log(p[r * C + y.data[r]]) / B;
      const optimizer = lithe.adam({ learnRate: 0.001, ...adamOpts });
      let last;
      const st = await measure(() => { last = model.trainStep({ x: xt, y: yt, loss: 'categorical_crossentropy', optimizer }); }, o);
      emit({ ...rec, ...st, first_loss: first, last_loss: last });
      optimizer.dispose();
      model.dispose();
    } catch (e) {
      emit({ ...rec, error: String(e.message ?? e).split('\n')[0] });
    }
  }
}
process.exit(0);
