// Model.saveOnnx (lithe_model_save_onnx_bytes) in the npm package: an .onnx graph (torch.onnx.export,
// test/onnx_golden.py) fine-tuned in WebAssembly, written back as ONNX, run by onnxruntime-node
// (bench/package.json's; skipped when bench/node_modules lacks it): the same predictions within
// 1e-5 of the output's scale, and the tuned weights in the file.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as lithe from '../src/index.js';
import { npyRead, maxAbsDiff, pkgDir } from './fixtures.mjs';

let work = null, skip = null, ort = null;
before(async () => {
  await lithe.init();
  try {
    ort = createRequire(path.join(pkgDir, '../../bench/package.json'))('onnxruntime-node');
  } catch {
    skip = 'needs onnxruntime-node in bench/node_modules (cd bench && npm ci)';
    return;
  }
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'lithe-js-onnx-export-'));
  const r = spawnSync('/usr/bin/python3', [path.join(pkgDir, 'test/onnx_golden.py'), work], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
});
after(() => work && fs.rmSync(work, { recursive: true, force: true }));

test('saveOnnx after five SGD steps: onnxruntime-node predicts what lithe does', async (t) => {
  if (skip) return t.skip(skip);
  const x = npyRead(path.join(work, 'x.npy')), target = npyRead(path.join(work, 't.npy'));
  const model = await lithe.load(path.join(work, 'cnn.onnx'));
  const opt = lithe.sgd({ learnRate: 0.1, gradClip: 0 });
  try {
    const before0 = model.predict(x.data, x.shape);
    for (let i = 0; i < 5; i++) {
      model.trainStep({ x: lithe.tensor(x.data, x.shape), y: lithe.tensor(target.data, target.shape), loss: 'l2', optimizer: opt });
    }
    const mine = model.predict(x.data, x.shape);
    assert.ok(maxAbsDiff(mine.data, before0.data) > 1e-4, 'five steps moved nothing');
    const bytes = model.saveOnnx();
    const session = await ort.InferenceSession.create(bytes);
    const out = (await session.run({ [session.inputNames[0]]: new ort.Tensor('float32', x.data, x.shape) }))[session.outputNames[0]];
    assert.deepEqual(Array.from(out.dims), mine.shape);
    const worst = maxAbsDiff(out.data, mine.data), scale = out.data.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    console.log(`# saveOnnx: max |onnxruntime - lithe| ${worst.toExponential(2)} (scale ${scale.toExponential(2)})`);
    assert.ok(worst <= 1e-5 * scale, `onnxruntime differs from lithe by ${worst}`);
  } finally {
    opt.dispose?.();
    model.dispose();
  }
});
