// TF.js out, checked by @tensorflow/tfjs itself: for every folder DIR/<model>/ that
// tests/test_tfjs_save.c wrote (lithe_tfjs_save after five fine-tuning steps, with x.npy and lithe's
// prediction y_lithe.npy), TF.js loads model.json and its shards the way its file loaders do
// (tf.io.getModelArtifactsForJSON: the manifest's paths read relative to the folder, the weights
// decoded by TF.js), predicts x at inference and must agree with lithe within 1e-5 relative
// (plus 1e-6 absolute), the tolerance of the import parity test (test_tfjs).
//
// A model TF.js cannot load from its own original files either (upsep: TF.js 4.22's
// SeparableConv2D.getConfig drops depth_multiplier, so the saved topology asks for a (3, 3, 2, 1)
// depthwise kernel where the weights are (3, 3, 2, 2)) is reported and skipped, when ORIG (the
// goldens' folder) is given and the original fails the same way.
//
// usage: node check_saved.mjs DIR [ORIG]
import * as tf from '@tensorflow/tfjs';
import fs from 'node:fs';
import path from 'node:path';

const dir = process.argv[2], orig = process.argv[3];
if (!dir) {
  console.error('usage: node check_saved.mjs DIR');
  process.exit(2);
}
await tf.setBackend('cpu');

function readNpy(file) {
  const b = fs.readFileSync(file);
  const hlen = b.readUInt16LE(8);
  const header = b.subarray(10, 10 + hlen).toString('latin1');
  if (!header.includes("'<f4'")) throw new Error(`${file}: not float32`);
  const shape = header.match(/\(([^)]*)\)/)[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const data = new Float32Array(b.buffer.slice(b.byteOffset + 10 + hlen, b.byteOffset + b.length));
  return tf.tensor(data, shape);
}

const models = fs.readdirSync(dir).filter((n) => fs.existsSync(path.join(dir, n, 'model.json'))).sort();
if (models.length < 7) throw new Error(`expected the 7 saved models in ${dir}, found ${models.length}`);
async function loadDir(d) {
  const json = JSON.parse(fs.readFileSync(path.join(d, 'model.json'), 'utf8'));
  const artifacts = await tf.io.getModelArtifactsForJSON(json, async (manifest) => {
    const specs = [], bufs = [];
    for (const group of manifest) {
      specs.push(...group.weights);
      for (const p of group.paths) bufs.push(new Uint8Array(fs.readFileSync(path.join(d, p))));
    }
    const all = new Uint8Array(bufs.reduce((a, b) => a + b.length, 0));
    let off = 0;
    for (const b of bufs) { all.set(b, off); off += b.length; }
    return [specs, all.buffer];
  });
  return tf.loadLayersModel(tf.io.fromMemory(artifacts), { strict: true });
}

let failed = 0, skipped = 0;
for (const name of models) {
  const d = path.join(dir, name);
  let model;
  try {
    model = await loadDir(d);
  } catch (e) {
    let origErr = null;
    if (orig && fs.existsSync(path.join(orig, name, 'model.json'))) {
      try { await loadDir(path.join(orig, name)); } catch (e2) { origErr = e2; }
    }
    if (origErr && String(origErr.message) === String(e.message)) {
      console.log(`tfjs_saved_check: ${name.padEnd(9)} skipped: TF.js cannot load the original either (${e.message})`);
      skipped++;
      continue;
    }
    console.log(`tfjs_saved_check: ${name.padEnd(9)} FAILED to load: ${e.message}`);
    failed++;
    continue;
  }
  const x = readNpy(path.join(d, 'x.npy'));
  const want = readNpy(path.join(d, 'y_lithe.npy'));
  const y = model.predict(x);
  const a = y.dataSync(), b = want.dataSync();
  let worst = 0, worstAbs = 0, bad = 0;
  if (a.length !== b.length) bad = 1;
  for (let i = 0; i < b.length; i++) {
    const diff = Math.abs(a[i] - b[i]);
    worstAbs = Math.max(worstAbs, diff);
    if (Math.abs(b[i]) >= 1e-3) worst = Math.max(worst, diff / Math.abs(b[i]));
    if (!(diff <= 1e-6 + 1e-5 * Math.abs(b[i]))) bad++;
  }
  console.log(`tfjs_saved_check: ${name.padEnd(9)} TF.js ${tf.version.tfjs} vs lithe: max rel ${worst.toExponential(2)}, ` +
              `abs ${worstAbs.toExponential(2)}${bad ? `  FAILED (${bad} of ${b.length} values)` : ''}`);
  if (bad) failed++;
}
if (failed) {
  console.error(`tfjs_saved_check: ${failed} models disagree`);
  process.exit(1);
}
if (models.length - skipped < 6) {
  console.error(`tfjs_saved_check: only ${models.length - skipped} models checked`);
  process.exit(1);
}
console.log(`tfjs_saved_check: ok (${models.length - skipped} models agree, ${skipped} skipped)`);
