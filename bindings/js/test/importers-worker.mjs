// A fresh instance for importers.test.mjs: loads workerData.bytes with load() or loadBytes() and
// reports whether the importer module was linked before and after, and the prediction.
import { parentPort, workerData } from 'node:worker_threads';
import * as lithe from '../src/index.js';

const { how, bytes, x, importers } = workerData;
await lithe.init(importers ? { importers } : {});
const linkedBefore = !!lithe.c().importers;
try {
  const model = how === 'load' ? await lithe.load(bytes) : lithe.loadBytes(bytes);
  const y = model.predict(x, [1, 2, 2, 3]).data;
  model.dispose();
  parentPort.postMessage({ linkedBefore, linkedAfter: !!lithe.c().importers, y });
} catch (e) {
  parentPort.postMessage({ linkedBefore, linkedAfter: !!lithe.c().importers, error: e.message, statusName: e.statusName });
}
