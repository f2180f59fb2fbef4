// A fresh instance for importers.test.mjs and onnx.test.mjs: loads workerData.bytes with load() or
// loadBytes() and reports the build, whether the importer module was linked before and after, and
// the prediction for x (shape: workerData.shape, default [1, 2, 2, 3]). workerData.simd: false
// picks the scalar build.
import { parentPort, workerData } from 'node:worker_threads';
import * as lithe from '../src/index.js';

const { how, bytes, x, shape, importers, simd } = workerData;
const { build } = await lithe.init({ ...(importers ? { importers } : {}), ...(simd === undefined ? {} : { simd }) });
const linkedBefore = !!lithe.c().importers;
try {
  const model = how === 'load' ? await lithe.load(bytes) : lithe.loadBytes(bytes);
  const y = model.predict(x, shape ?? [1, 2, 2, 3]).data;
  model.dispose();
  parentPort.postMessage({ build, linkedBefore, linkedAfter: !!lithe.c().importers, y });
} catch (e) {
  parentPort.postMessage({ build, linkedBefore, linkedAfter: !!lithe.c().importers, error: e.message, statusName: e.statusName });
}
