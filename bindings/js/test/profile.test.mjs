// LITHE_GRAPH_PROFILE in the npm package (lithe_set_options through the C-mirror layer): the
// graph profiler's clock is timespec_get, which Emscripten 3.1.6 leaves to JavaScript; the loader
// gives it to the importer module (src/loader.js), so the per-node table that disposing the model
// prints holds real times (with the loader's old "not supported" stand-in it read uninitialised
// stack: huge, negative or zero times).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as lithe from '../src/index.js';

test('the graph profile of an imported model has real times', async () => {
  const lines = [];
  await lithe.init({ threads: 1, print: (fd, line) => lines.push(line) });
  const r = lithe.c();
  // lithe_options by value: lithe_options_defaults(sret), then graph_profile (the fourth field) = "1"
  const opts = r.malloc(256);
  r.lithe_options_defaults(opts);
  const view = new DataView(r.memory.buffer);
  assert.ok(view.getUint32(opts, true) >= 16, 'lithe_options.size');
  view.setUint32(opts + 12, r.allocString('1'), true);
  r.check(r.lithe_set_options(opts));
  const model = await lithe.load({
    modelJson: { modelTopology: { class_name: 'Sequential', config: { name: 's', layers: [
      { class_name: 'Dense', config: { name: 'd', units: 64, activation: 'relu', batch_input_shape: [null, 256] } }] } },
    weightsManifest: [{ paths: ['w.bin'], weights: [{ name: 'd/kernel', shape: [256, 64], dtype: 'float32' }, { name: 'd/bias', shape: [64], dtype: 'float32' }] }] },
    weights: new Float32Array(256 * 64 + 64).fill(0.01).buffer,
  });
  const x = new Float32Array(32 * 256).fill(1);
  const t0 = performance.now();
  for (let i = 0; i < 50; i++) model.predict(x, [32, 256]);
  const wallUs = ((performance.now() - t0) / 50) * 1000;
  model.dispose();
  const head = lines.find((l) => l.startsWith('lithe graph profile:'));
  assert.ok(head, `the profile table was printed: ${lines.join('\n')}`);
  const perRun = Number(/([-\d.e+]+) us per run in the nodes/.exec(head)[1]);
  assert.ok(perRun > 0 && perRun <= wallUs * 1.5 + 50, `${perRun} us per run in the nodes, against ${wallUs.toFixed(1)} us of wall clock per predict`);
  const rows = lines.filter((l) => /^\s+\d+ \S+\s+[-\d.]+\s+[-\d.]+\s+[-\d.]+%/.test(l));
  assert.ok(rows.length >= 1, lines.join('\n'));
  for (const row of rows) {
    const [, , mean, min] = row.trim().split(/\s+/).map(Number);
    assert.ok(mean >= 0 && min >= 0 && min <= mean && mean <= wallUs * 1.5 + 50, row);
  }
});
