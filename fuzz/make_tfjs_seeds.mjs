// Seeds for fuzz_tfjs: tiny TF.js layers models built and saved by @tensorflow/tfjs (the oracle
// tests/tfjs installs), each written as model.json, a NUL byte, then the weight shards — the
// input format fuzz_tfjs.c splits — and kept under the 4096 bytes fuzz/run.sh lets an input grow
// to by dropping the initializer / regularizer / constraint entries (lithe does not read them).
//
//   (cd tests/tfjs && npm ci) && node fuzz/make_tfjs_seeds.mjs   # writes fuzz/corpus/tfjs/*.bin
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', 'tests', 'tfjs', 'package.json'));
const tf = require('@tensorflow/tfjs');
await tf.setBackend('cpu');
const out = path.join(here, 'corpus', 'tfjs');
fs.mkdirSync(out, { recursive: true });
const L = tf.layers;

function strip(v) {
  if (Array.isArray(v)) return v.map(strip);
  if (v && typeof v === 'object') {
    const o = {};
    for (const [k, x] of Object.entries(v))
      if (!/(initializer|regularizer|constraint)$/.test(k) && k !== 'trainable') o[k] = strip(x);
    return o;
  }
  return v;
}

async function seed(name, model) {
  let art;
  await model.save(tf.io.withSaveHandler(async (a) => { art = a; return { modelArtifactsInfo: {} }; }));
  const json = JSON.stringify({ format: 'layers-model', modelTopology: strip(art.modelTopology),
                                weightsManifest: [{ paths: ['w.bin'], weights: art.weightSpecs }] });
  const w = new Uint8Array(art.weightData || new ArrayBuffer(0));
  const bytes = Buffer.concat([Buffer.from(json), Buffer.from([0]), Buffer.from(w)]);
  if (bytes.length > 4096) throw new Error(`${name}: ${bytes.length} bytes`);
  fs.writeFileSync(path.join(out, `${name}.bin`), bytes);
  console.log(`${name}.bin ${bytes.length} bytes`);
}

{
  const m = tf.sequential();
  m.add(L.dense({ inputShape: [3], units: 4, activation: 'elu' }));
  m.add(L.dropout({ rate: 0.5 }));
  m.add(L.dense({ units: 2, activation: 'softmax' }));
  await seed('mlp', m);
}
{
  const m = tf.sequential();
  m.add(L.conv2d({ inputShape: [5, 5, 2], filters: 2, kernelSize: 3, padding: 'same', activation: 'relu' }));
  m.add(L.batchNormalization());
  m.add(L.maxPooling2d({ poolSize: 2, padding: 'same' }));
  m.add(L.flatten());
  m.add(L.dense({ units: 2 }));
  await seed('cnn', m);
}
{
  const i = tf.input({ shape: [4, 4, 2], name: 'x' });
  const a = L.depthwiseConv2d({ kernelSize: 2, padding: 'same', name: 'dw' }).apply(i);
  const b = L.averagePooling2d({ poolSize: 2, strides: 1, padding: 'same', name: 'ap' }).apply(i);
  const c = L.concatenate({ name: 'cat' }).apply([a, b]);
  const d = L.globalAveragePooling2d({ name: 'gap' }).apply(L.zeroPadding2d({ padding: 1, name: 'zp' }).apply(c));
  const e = L.add({ name: 'add' }).apply([d, L.reshape({ targetShape: [4], name: 'rs' }).apply(d)]);
  await seed('functional', tf.model({ inputs: i, outputs: L.activation({ activation: 'tanh', name: 'act' }).apply(e) }));
}
{
  const m = tf.sequential();
  m.add(L.embedding({ inputDim: 7, outputDim: 3, inputLength: 4 }));
  m.add(L.layerNormalization());
  m.add(L.globalAveragePooling1d());
  m.add(L.dense({ units: 2, activation: 'sigmoid' }));
  await seed('text', m);
}
{
  const m = tf.sequential();
  m.add(L.separableConv2d({ inputShape: [3, 3, 2], filters: 2, kernelSize: 2, padding: 'same' }));
  m.add(L.upSampling2d({ size: [2, 1] }));
  m.add(L.globalMaxPooling2d({}));
  await seed('upsep', m);
}
{
  const m = tf.sequential();
  m.add(L.embedding({ inputDim: 5, outputDim: 2, inputLength: 6 }));
  m.add(L.conv1d({ filters: 2, kernelSize: 3, padding: 'same' }));
  m.add(L.maxPooling1d({ poolSize: 2 }));
  m.add(L.globalMaxPooling1d());
  await seed('text_cnn', m);
}
