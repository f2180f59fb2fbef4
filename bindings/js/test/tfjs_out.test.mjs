// TF.js out from the npm package (Model.saveTfjs over lithe_tfjs_save_bytes), checked by
// @tensorflow/tfjs itself (tests/tfjs's pinned copy, installed there by npm ci as ctest's TF.js
// fixture does): a CNN built and randomly initialised in TF.js (Conv2D, BatchNormalization with
// moving statistics, MaxPooling2D, Flatten, Dense softmax), handed to lithe as TF.js's own
// artifacts, fine-tuned five trainStep()s (SGD) in lithe, written back by saveTfjs(); TF.js loads
// what lithe wrote and predicts what lithe predicts (within 1e-5 relative, plus 1e-6).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import * as lithe from '../src/index.js';
import { repoDir } from './fixtures.mjs';

let tf;
before(async () => {
  await lithe.init();
  const dir = path.join(repoDir, 'tests', 'tfjs');
  if (!fs.existsSync(path.join(dir, 'node_modules', '@tensorflow', 'tfjs', 'package.json'))) {
    const r = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'inherit' });
    assert.equal(r.status, 0, 'npm ci in tests/tfjs (the TF.js oracle) failed');
  }
  tf = createRequire(path.join(dir, 'package.json'))('@tensorflow/tfjs');
  await tf.setBackend('cpu');
});

let seed = 20261129;
function rand() { // mulberry32: the same weights every run
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const uniform = (n, lo, hi) => Float32Array.from({ length: n }, () => lo + (hi - lo) * rand());

function close(a, b, what) {
  assert.equal(a.length, b.length, `${what}: lengths`);
  let worst = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    assert.ok(d <= 1e-6 + 1e-5 * Math.abs(b[i]), `${what}: value ${i}: ${a[i]} vs ${b[i]}`);
    if (Math.abs(b[i]) >= 1e-3) worst = Math.max(worst, d / Math.abs(b[i]));
  }
  return worst;
}

test('saveTfjs after fine-tuning: TF.js loads it and predicts what lithe predicts', async () => {
  const m = tf.sequential({ name: 'cnn_out' });
  m.add(tf.layers.conv2d({ inputShape: [6, 6, 2], filters: 3, kernelSize: 3, padding: 'same', activation: 'relu' }));
  m.add(tf.layers.batchNormalization());
  m.add(tf.layers.maxPooling2d({ poolSize: 2 }));
  m.add(tf.layers.flatten());
  m.add(tf.layers.dense({ units: 4, activation: 'softmax' }));
  for (const w of m.weights) {
    const n = w.shape.reduce((a, b) => a * b, 1), name = w.originalName;
    const [lo, hi] = name.endsWith('moving_variance') || name.endsWith('gamma') ? [0.5, 1.5] : [-0.6, 0.6];
    w.write(tf.tensor(uniform(n, lo, hi), w.shape));
  }
  let art;
  await m.save(tf.io.withSaveHandler(async (a) => { art = a; return { modelArtifactsInfo: { dateSaved: new Date(), modelTopologyType: 'JSON' } }; }));
  const x = uniform(5 * 6 * 6 * 2, -1, 1), shape = [5, 6, 6, 2];
  const y0 = m.predict(tf.tensor(x, shape)).dataSync();

  const model = lithe.loadTfjs(art);
  try {
    close(model.predict(x, shape).data, y0, 'lithe vs TF.js before training');
    const opt = lithe.sgd({ learnRate: 0.5, gradClip: 0 });
    for (let step = 0; step < 5; step++) model.trainStep({ x: lithe.tensor(x, shape), y: [0, 1, 2, 3, 0], optimizer: opt });
    const yl = model.predict(x, shape).data;
    assert.ok(Math.max(...yl.map((v, i) => Math.abs(v - y0[i]))) > 1e-3, 'training did not move the model');

    const { modelJson, weights, artifacts } = model.saveTfjs();
    const back = await tf.loadLayersModel(tf.io.fromMemory(artifacts), { strict: true });
    const worst = close(back.predict(tf.tensor(x, shape)).dataSync(), yl, 'TF.js on the saved model vs lithe');
    console.log(`# saveTfjs after 5 SGD steps: TF.js ${tf.version.tfjs} predicts lithe's output within ${worst.toExponential(2)} relative`);
    // model.json as a file would hold it: TF.js's own loader of model.json + shards reads it too
    const fromJson = await tf.io.getModelArtifactsForJSON(JSON.parse(modelJson), async (manifest) => {
      assert.deepEqual(manifest[0].paths, ['group1-shard1of1.bin']);
      return [manifest[0].weights, weights.buffer];
    });
    const back2 = await tf.loadLayersModel(tf.io.fromMemory(fromJson), { strict: true });
    assert.deepEqual(Array.from(back2.predict(tf.tensor(x, shape)).dataSync()), Array.from(back.predict(tf.tensor(x, shape)).dataSync()));
    assert.deepEqual(JSON.parse(modelJson).modelTopology, art.modelTopology);
    // and lithe reads what it wrote, to the same bits
    const again = lithe.loadTfjs({ modelJson, weights });
    assert.deepEqual(Array.from(again.predict(x, shape).data), Array.from(yl));
    again.dispose();
  } finally {
    model.dispose();
  }
});
