// onnxruntime-node on one ONNX file (a QDQ model written by `lithe quantize` + `lithe convert
// --to-onnx`, or the float one), one thread, the input from a .npy: prints one JSON line with the
// latency statistics of common.mjs's measure (median / min over >= 30 runs after warm-up).
//   node bench/quant/ort_time.mjs MODEL.onnx X.npy [--max-s S]
import { createRequire } from 'node:module';
import { npyRead, measure, pkgVersion } from '../runners/common.mjs';

const [model, xfile, ...rest] = process.argv.slice(2);
const maxS = rest[0] === '--max-s' ? Number(rest[1]) : 20;
const ort = createRequire(import.meta.url)('onnxruntime-node');
const sess = await ort.InferenceSession.create(model, {
  executionProviders: ['cpu'], intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential',
  graphOptimizationLevel: 'all',
});
const x = npyRead(xfile);
const feeds = { [sess.inputNames[0]]: new ort.Tensor('float32', x.data, x.shape) };
let y;
const st = await measure(async () => {
  const r = await sess.run(feeds);
  y = await r[sess.outputNames[0]].getData();
}, { maxS });
console.log(JSON.stringify({ runner: `onnxruntime-node ${pkgVersion('onnxruntime-node')}`, model, batch: x.shape[0], ...st,
                             y0: Array.from(y.slice(0, 10)) }));
