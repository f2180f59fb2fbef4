// Fine-tuning on a memory budget from JavaScript (issue 26): freeze an imported graph by its ONNX
// initializer names, plan a step (planTrain), and have an over-budget trainStep refused with the
// figures (setMemoryBudget). The graph: test/onnx_golden.py's CNN (conv, fc1, fc2; torch 1.13).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as lithe from '../src/index.js';
import { npyRead, pkgDir } from './fixtures.mjs';

let work = null, skip = null;
before(async () => {
  await lithe.init();
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'lithe-js-mem-'));
  const python = '/usr/bin/python3';
  if (!fs.existsSync(python)) { skip = 'needs /usr/bin/python3 with python3-torch'; return; }
  const r = spawnSync(python, [path.join(pkgDir, 'test/onnx_golden.py'), work], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
});
after(() => work && fs.rmSync(work, { recursive: true, force: true }));

test('freeze by pattern, planTrain, setMemoryBudget', async (t) => {
  if (skip) return t.skip(skip);
  const x = npyRead(path.join(work, 'x.npy')), target = npyRead(path.join(work, 't.npy'));
  const model = await lithe.load(path.join(work, 'cnn.onnx'));
  const opt = lithe.sgd({ learnRate: 0.1, gradClip: 0 });
  try {
    assert.equal(model.freeze('conv.*'), 2);
    assert.ok(model.isFrozen('conv.weight') && !model.isFrozen('fc2.weight'));
    assert.throws(() => model.freeze('nothing*'), /matches/);
    const p = model.planTrain({ x: lithe.tensor(x.data, x.shape), batch: x.shape[0], optimizer: opt });
    assert.equal(p.grads, (64 * 10 + 10 + 10 * 3 + 3) * 4); // fc1 and fc2 only
    assert.equal(p.total, p.params + p.grads + p.optState + p.activations + p.workspace);
    assert.ok(p.activations > 0);
    const step = () => model.trainStep({ x: lithe.tensor(x.data, x.shape), y: lithe.tensor(target.data, target.shape), loss: 'l2', optimizer: opt });
    model.setMemoryBudget(Math.floor(p.total / 4), { optimizer: opt });
    assert.throws(step, /params .*grads .*optimizer state .*activations .*budget/);
    model.setMemoryBudget(0);
    assert.ok(Number.isFinite(step()));
  } finally {
    opt.dispose();
    model.dispose();
  }
});

test('setRecompute rows: the steps of the plain model', async (t) => {
  if (skip) return t.skip(skip);
  const x = npyRead(path.join(work, 'x.npy')), target = npyRead(path.join(work, 't.npy'));
  const losses = [];
  for (const rows of [0, 2]) {
    const model = await lithe.load(path.join(work, 'cnn.onnx'));
    const opt = lithe.sgd({ learnRate: 0.1, gradClip: 0 });
    try {
      if (rows) {
        assert.throws(() => model.setRecompute(true, { rows: -1 }), /rows/);
        assert.equal(model.setRecompute(true, { rows }), model);
      }
      const step = () => model.trainStep({ x: lithe.tensor(x.data, x.shape), y: lithe.tensor(target.data, target.shape), loss: 'l2', optimizer: opt });
      losses.push([step(), step(), step()]);
    } finally {
      opt.dispose();
      model.dispose();
    }
  }
  for (let i = 0; i < 3; i++) assert.ok(Math.abs(losses[1][i] - losses[0][i]) <= 1e-5 * Math.abs(losses[0][i]) + 1e-7, `${losses}`);
});
