// ONNX Runtime on the suite's ONNX files: onnxruntime-node (native CPU EP) or onnxruntime-web
// (its WebAssembly SIMD build, run in Node). One session per model, threads forced by the session
// options (intraOpNumThreads / interOpNumThreads) or ort.env.wasm.numThreads. Latency = one
// session.run including reading the output's data.
//   node ort.mjs --backend node|web --dir BUILD/bench [--threads N] [--quick] [--workloads a,b]
import path from 'node:path';
import { createRequire } from 'node:module';
import { npyRead, maxAbsErr, parseArgs, measure, emit, pkgVersion, WORKLOADS } from './common.mjs';

const o = parseArgs(process.argv.slice(2));
const require = createRequire(import.meta.url);
let ort, name, config;
if (o.backend === 'web') {
  ort = require('onnxruntime-web');
  ort.env.wasm.numThreads = o.threads;
  ort.env.wasm.simd = true;
  name = `onnxruntime-web ${pkgVersion('onnxruntime-web')}`;
  config = `wasm EP, SIMD, numThreads=${o.threads}`;
} else {
  ort = require('onnxruntime-node');
  name = `onnxruntime-node ${pkgVersion('onnxruntime-node')}`;
  config = `cpu EP, intraOp=${o.threads}, interOp=1`;
}
const sessions = {};
for (const wl of o.workloads ?? Object.keys(WORKLOADS)) {
  const model = WORKLOADS[wl];
  const rec = { group: 'infer', workload: wl, runner: name, impl: o.backend === 'web' ? 'wasm' : 'native',
                threads: o.threads, config };
  try {
    const t0 = performance.now();
    sessions[model] ??= await ort.InferenceSession.create(path.join(o.dir, `${model}.onnx`), {
      executionProviders: [o.backend === 'web' ? 'wasm' : 'cpu'], intraOpNumThreads: o.threads, interOpNumThreads: 1,
      executionMode: 'sequential', graphOptimizationLevel: 'all',
    });
    const sess = sessions[model];
    rec.extra = `session create ${(performance.now() - t0).toFixed(0)} ms`;
    const x = npyRead(path.join(o.dir, `${wl}_x.npy`));
    const ref = npyRead(path.join(o.dir, `${wl}_ref.npy`));
    const feeds = { [sess.inputNames[0]]: new ort.Tensor('float32', x.data, x.shape) };
    let y;
    const st = await measure(async () => {
      const r = await sess.run(feeds);
      y = await r[sess.outputNames[0]].getData();
    }, o);
    emit({ ...rec, ...st, ...maxAbsErr(y, ref.data), ref: 'torch output, same ONNX file' });
  } catch (e) {
    emit({ ...rec, error: String(e.message ?? e).split('\n')[0] });
  }
}
process.exit(0);
