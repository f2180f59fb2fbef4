// Runs in a worker thread for pack.test.mjs: the package in a worker, with no access to the
// main thread's instance.
import { parentPort, workerData } from 'node:worker_threads';
import * as lithe from '../src/index.js';

await lithe.init();
const model = lithe.loadBytes(workerData.model);
const y = model.predict(workerData.x, [64, 784]);
model.dispose();
parentPort.postMessage({ shape: y.shape, data: y.data });
