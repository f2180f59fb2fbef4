// The importer module (dist/lithe-importers.wasm: ONNX, TF.js and the graph executor; docs/wasm.md)
// is linked into the core module only when a model needs it, and then transparently: load() of a
// TF.js model or of a .lithe file holding an imported graph links it, the synchronous loaders
// link it in Node, and where that cannot be done synchronously the error says what to do. Each
// fresh instance runs in its own worker thread (the package holds one instance per thread).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import * as lithe from '../src/index.js';

// a 1x1 Conv2D with an identity kernel, then Flatten: the output is the input (NHWC order)
const topology = { class_name: 'Sequential', config: { name: 's', layers: [
  { class_name: 'Conv2D', config: { name: 'c', filters: 3, kernel_size: [1, 1], use_bias: false, batch_input_shape: [null, 2, 2, 3] } },
  { class_name: 'Flatten', config: { name: 'f' } }] } };
const weightSpecs = [{ name: 'c/kernel', shape: [1, 1, 3, 3], dtype: 'float32' }];
const eye = new Float32Array([1, 0, 0, 0, 1, 0, 0, 0, 1]);
const x = Float32Array.from({ length: 12 }, (_, i) => i);

function inWorker(data) {
  return new Promise((resolve, reject) => {
    const w = new Worker(new URL('./importers-worker.mjs', import.meta.url), { workerData: data });
    w.once('message', resolve);
    w.once('error', reject);
  });
}

test('the importer module is linked when a model first needs it, transparently', async () => {
  await lithe.init();
  const r = lithe.c();
  assert.ok(!r.importers, 'linked at init');

  // the core alone: the C entry points fail with a message naming the module, and raise the flag
  // the loader reads (cleared by reading it)
  const json = r.allocString('{"format":"layers-model"}');
  try {
    const status = r.lithe_tfjs_load_bytes(json, 25, 0, 0, r.outPtr(0));
    assert.equal(status, lithe.STATUS.UNSUPPORTED);
    assert.match(r.cstring(r.lithe_last_error()), /lithe_tfjs_load_bytes: .*lithe-importers\.wasm, which is not loaded/);
    assert.equal(r.lithe_js_importers_wanted(), 1);
    assert.equal(r.lithe_js_importers_wanted(), 0);
  } finally {
    r.free(json);
  }

  // load() links it and the model runs
  const model = await lithe.load({ modelTopology: topology, weightSpecs, weightData: eye.buffer });
  assert.ok(r.importers, 'not linked by load()');
  assert.deepEqual(Array.from(model.predict(x, [1, 2, 2, 3]).data), Array.from(x));
  const names = r.outPtr(0);
  r.lithe_onnx_op_names(names);
  assert.ok(r.readU32(names) > 50, 'the op list comes from the linked module');
  const bytes = model.save(); // a .lithe file holding the graph
  model.dispose();

  // fresh instances: such a .lithe through load(), and through the synchronous loadBytes (Node
  // links it synchronously)
  for (const how of ['load', 'loadBytes']) {
    const got = await inWorker({ how, bytes, x });
    assert.equal(got.error, undefined, `${how}: ${got.error}`);
    assert.equal(got.linkedBefore, false, how);
    assert.equal(got.linkedAfter, true, how);
    assert.deepEqual(Array.from(got.y), Array.from(x), how);
  }
  // where the module cannot be had synchronously (a browser's main thread; here a URL the loader
  // would have to fetch), loadBytes throws lithe's error, which names it and load()
  const got = await inWorker({ how: 'loadBytes', bytes, x, importers: 'http://127.0.0.1:9/lithe-importers.wasm' });
  assert.equal(got.statusName, 'LITHE_ERR_UNSUPPORTED');
  assert.match(got.error, /lithe-importers\.wasm, which is not loaded \(lithe\.load\(\) loads it/);
  assert.equal(got.linkedAfter, false);
});
