// LoRA adapters in the npm package (Model.addLora, saveLora, loadLora, mergeLora; the C core is
// tested against PyTorch in tests/test_lora.c): an .onnx CNN (torch.onnx.export, test/onnx_golden.py)
// fine-tuned in WebAssembly through rank-2 adapters on its Conv and Gemm weights, its base left as it
// was; the adapters alone reload onto a fresh import (same predictions) and are refused by a
// different base; merged, the model's ONNX export predicts the same in onnxruntime-node (bench's;
// reloaded in lithe when bench/node_modules lacks it).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as lithe from '../src/index.js';
import { npyRead, maxAbsDiff, pkgDir } from './fixtures.mjs';

let work = null, ort = null;
before(async () => {
  await lithe.init();
  try {
    ort = createRequire(path.join(pkgDir, '../../bench/package.json'))('onnxruntime-node');
  } catch {
    ort = null;
  }
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'lithe-js-lora-'));
  const r = spawnSync('/usr/bin/python3', [path.join(pkgDir, 'test/onnx_golden.py'), work], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
});
after(() => work && fs.rmSync(work, { recursive: true, force: true }));

test('addLora: train the adapters, save them alone, reload, refuse another base, merge and export', async () => {
  const x = npyRead(path.join(work, 'x.npy')), target = npyRead(path.join(work, 't.npy'));
  const file = path.join(work, 'cnn.onnx');
  const model = await lithe.load(file);
  const opt = lithe.sgd({ learnRate: 0.1, gradClip: 0 });
  const models = [model];
  try {
    const base = model.loraBaseHash();
    const before0 = model.predict(x.data, x.shape);
    const n = model.addLora({ rank: 2, alpha: 4, seed: 1 });
    assert.ok(n >= 2, `adapted ${n} weights`);
    assert.equal(model.loraCount, n);
    assert.throws(() => model.addLora({ pattern: 'no such weight' }), (e) => e.statusName === 'LITHE_ERR_NOT_FOUND');
    assert.ok(maxAbsDiff(model.predict(x.data, x.shape).data, before0.data) === 0, 'B starts at zero');
    for (let i = 0; i < 5; i++) {
      model.trainStep({ x: lithe.tensor(x.data, x.shape), y: lithe.tensor(target.data, target.shape), loss: 'l2', optimizer: opt });
    }
    const mine = model.predict(x.data, x.shape);
    assert.ok(maxAbsDiff(mine.data, before0.data) > 1e-5, 'five steps moved nothing');
    assert.equal(model.loraBaseHash(), base, 'the base moved');

    const adapters = model.saveLora();
    const fresh = await lithe.load(file);
    models.push(fresh);
    fresh.loadLora(adapters);
    assert.equal(fresh.loraCount, n);
    assert.equal(maxAbsDiff(fresh.predict(x.data, x.shape).data, mine.data), 0);

    const other = await lithe.load(file); // one full step: other weights
    models.push(other);
    other.trainStep({ x: lithe.tensor(x.data, x.shape), y: lithe.tensor(target.data, target.shape), loss: 'l2', optimizer: lithe.sgd({ learnRate: 0.1 }) });
    assert.throws(() => other.loadLora(adapters), (e) => e.statusName === 'LITHE_ERR_VALUE' && /different base/.test(e.detail));

    fresh.mergeLora();
    assert.equal(fresh.loraCount, 0);
    const bytes = fresh.saveOnnx();
    let out;
    if (ort) {
      const session = await ort.InferenceSession.create(bytes);
      out = (await session.run({ [session.inputNames[0]]: new ort.Tensor('float32', x.data, x.shape) }))[session.outputNames[0]].data;
    } else {
      const back = lithe.loadBytes(bytes);
      models.push(back);
      out = back.predict(x.data, x.shape).data;
    }
    const worst = maxAbsDiff(out, mine.data), scale = mine.data.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    console.log(`# LoRA: ${n} adapters, file ${adapters.byteLength} bytes (model ${fs.statSync(file).size}); merged export in ${ort ? 'onnxruntime-node' : 'lithe'}: max diff ${worst.toExponential(2)}`);
    assert.ok(worst <= 1e-5 * scale, `the merged export differs by ${worst}`);
  } finally {
    opt.dispose?.();
    for (const m of models) m.dispose();
  }
});
