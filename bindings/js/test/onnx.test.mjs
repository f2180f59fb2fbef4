// lithe.load of an .onnx file (exported by torch.onnx.export; torch 1.13 the oracle, run by
// test/onnx_golden.py): predictions within 1e-5 of torch, and one SGD step (trainStep with the l2
// loss) giving torch's model after the same step.
import { test, before, after } from 'node:test';
import { Worker } from 'node:worker_threads';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as lithe from '../src/index.js';
import { npyRead, maxAbsDiff, pkgDir } from './fixtures.mjs';

let work = null, skip = null;
before(async () => {
  await lithe.init();
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'lithe-js-onnx-'));
  const python = '/usr/bin/python3';
  if (!fs.existsSync(python)) { skip = 'needs /usr/bin/python3 with python3-torch'; return; }
  const r = spawnSync(python, [path.join(pkgDir, 'test/onnx_golden.py'), work], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
});
after(() => work && fs.rmSync(work, { recursive: true, force: true }));

test('load an .onnx file and predict: torch within 1e-5', async (t) => {
  if (skip) return t.skip(skip);
  const x = npyRead(path.join(work, 'x.npy')), golden = npyRead(path.join(work, 'y.npy'));
  for (const model of [await lithe.load(path.join(work, 'cnn.onnx')),
    lithe.loadBytes(fs.readFileSync(path.join(work, 'cnn.onnx')))]) {
    try {
      const y = model.predict(x.data, x.shape);
      assert.deepEqual(y.shape, golden.shape);
      const worst = maxAbsDiff(y.data, golden.data);
      console.log(`# .onnx in wasm: max |lithe - torch| ${worst.toExponential(2)}`);
      assert.ok(worst <= 1e-5, `largest difference from torch: ${worst}`);
      // another batch size: the graph's batch axis is dynamic
      const y2 = model.predict(x.data.subarray(0, 64), [1, 1, 8, 8]);
      assert.ok(maxAbsDiff(y2.data, golden.data.subarray(0, 3)) <= 1e-5);
    } finally {
      model.dispose();
    }
  }
});

test('trainStep on an .onnx graph: torch after one SGD step', async (t) => {
  if (skip) return t.skip(skip);
  const x = npyRead(path.join(work, 'x.npy')), target = npyRead(path.join(work, 't.npy'));
  const after1 = npyRead(path.join(work, 'y_after.npy'));
  const torchLoss = JSON.parse(fs.readFileSync(path.join(work, 'loss.json'), 'utf8'));
  const model = await lithe.load(path.join(work, 'cnn.onnx'));
  const opt = lithe.sgd({ learnRate: 0.1, gradClip: 0 });
  try {
    const loss = model.trainStep({ x: lithe.tensor(x.data, x.shape), y: lithe.tensor(target.data, target.shape), loss: 'l2', optimizer: opt });
    // what trainStep reports: torch's mean squared error of the output before the step
    assert.ok(Math.abs(loss - torchLoss.mse) <= 1e-6 + 1e-5 * torchLoss.mse, `loss ${loss}, torch MSELoss ${torchLoss.mse}`);
    const worst = maxAbsDiff(model.predict(x.data, x.shape).data, after1.data);
    console.log(`# after one SGD step: max |lithe - torch| ${worst.toExponential(2)}`);
    assert.ok(worst <= 1e-5, `after one step, largest difference from torch: ${worst}`);
    // the tuned graph saves as .lithe bytes and loads back with the same predictions
    const back = lithe.loadBytes(model.save());
    assert.deepEqual(back.predict(x.data, x.shape).data, model.predict(x.data, x.shape).data);
    back.dispose();
  } finally {
    model.dispose();
    opt.dispose();
  }
});

// The convolutions run in the importer module, which each core build has its own of
// (lithe-importers-simd.wasm, lithe-importers.wasm; docs/wasm.md): the scalar build, in a fresh
// instance, links its own and predicts the same CNN within 1e-5 of torch.
test('the scalar build links its own importer module: the CNN within 1e-5 of torch', async (t) => {
  if (skip) return t.skip(skip);
  const x = npyRead(path.join(work, 'x.npy')), golden = npyRead(path.join(work, 'y.npy'));
  const got = await new Promise((resolve, reject) => {
    const w = new Worker(new URL('./importers-worker.mjs', import.meta.url), {
      workerData: { how: 'load', bytes: fs.readFileSync(path.join(work, 'cnn.onnx')), x: x.data, shape: x.shape, simd: false } });
    w.once('message', resolve);
    w.once('error', reject);
  });
  assert.equal(got.error, undefined);
  assert.equal(got.build, 'scalar');
  assert.ok(!got.linkedBefore && got.linkedAfter, 'linked by load()');
  const worst = maxAbsDiff(got.y, golden.data);
  console.log(`# .onnx in the scalar build: max |lithe - torch| ${worst.toExponential(2)}`);
  assert.ok(worst <= 1e-5, `largest difference from torch: ${worst}`);
});
