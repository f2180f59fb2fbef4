// The TensorFlow.js oracle for tests/test_tfjs.c: builds small layers models in @tensorflow/tfjs
// (its pure-JS CPU backend), sets seeded random weights (BatchNormalization's moving statistics
// too), saves each as OUT/<name>/model.json + weight shards exactly as TF.js's own savers lay them
// out, and writes to OUT/tfjs_goldens.txt (tests/golden/golden.h's format) the input, TF.js's
// predictions, a random cotangent R and TF.js's gradients of sum(Y * R) with respect to the input
// and every trainable weight (by the weight's manifest name), and the weights themselves.
//
// usage: node gen_tfjs_goldens.mjs OUT
import * as tf from '@tensorflow/tfjs';
import fs from 'node:fs';
import path from 'node:path';

const out = process.argv[2];
if (!out) {
  console.error('usage: node gen_tfjs_goldens.mjs OUT');
  process.exit(2);
}
fs.mkdirSync(out, { recursive: true });
await tf.setBackend('cpu');

// A seeded generator (mulberry32): the goldens are the same on every run.
let seed = 20261124;
function rand() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const uniform = (shape, lo, hi) => {
  const n = shape.reduce((a, b) => a * b, 1);
  return tf.tensor(Float32Array.from({ length: n }, () => lo + (hi - lo) * rand()), shape);
};

const lines = ['# TF.js goldens (tests/tfjs/gen_tfjs_goldens.mjs, @tensorflow/tfjs ' + tf.version.tfjs + ')'];
function golden(name, t) {
  const v = t.dataSync();
  lines.push(`${name} f ${t.shape.length} ${t.shape.join(' ')} ${Array.from(v, (x) => String(x)).join(' ')}`);
}

// Random weights: kernels and biases uniform, BatchNormalization's moving variance in [0.5, 1.5].
function randomize(model) {
  for (const w of model.weights) {
    const n = w.originalName;
    let t;
    if (n.endsWith('moving_variance')) t = uniform(w.shape, 0.5, 1.5);
    else if (n.endsWith('gamma')) t = uniform(w.shape, 0.5, 1.5);
    else if (n.endsWith('moving_mean')) t = uniform(w.shape, -0.5, 0.5);
    else t = uniform(w.shape, -0.6, 0.6);
    w.write(t);
  }
}

// The artifacts as files: model.json (format "layers-model", the manifest) and the shards, the
// weight bytes split into `shards` pieces at arbitrary byte offsets (as TF.js splits at 4 MiB),
// grouped as `groups` lists the weights per group (default: one group).
async function saveFiles(model, dir, { shards = 1, groups = null } = {}) {
  let art;
  await model.save(tf.io.withSaveHandler(async (a) => {
    art = a;
    return { modelArtifactsInfo: { dateSaved: new Date(), modelTopologyType: 'JSON' } };
  }));
  fs.mkdirSync(dir, { recursive: true });
  const data = new Uint8Array(art.weightData);
  const specs = art.weightSpecs;
  const sizes = specs.map((s) => s.shape.reduce((a, b) => a * b, 1) * 4);
  const bounds = groups || [specs.length];
  const manifest = [];
  let w0 = 0, off = 0;
  bounds.forEach((count, g) => {
    const weights = specs.slice(w0, w0 + count);
    const bytes = sizes.slice(w0, w0 + count).reduce((a, b) => a + b, 0);
    const chunk = data.slice(off, off + bytes);
    const paths = [];
    for (let k = 0; k < shards; k++) {
      const a = Math.floor((chunk.length * k) / shards), b = Math.floor((chunk.length * (k + 1)) / shards);
      const p = `group${g + 1}-shard${k + 1}of${shards}.bin`;
      fs.writeFileSync(path.join(dir, p), chunk.slice(a, b));
      paths.push(k === 0 && g === 0 ? './' + p : p);
    }
    manifest.push({ paths, weights });
    w0 += count;
    off += bytes;
  });
  const json = { modelTopology: art.modelTopology, format: art.format, generatedBy: art.generatedBy,
                 convertedBy: art.convertedBy, weightsManifest: manifest };
  fs.writeFileSync(path.join(dir, 'model.json'), JSON.stringify(json));
  return { json, data, specs };
}

// A float32 tensor as a .npy file (format 1.0), for the command-line test.
function npy(file, t) {
  let h = `{'descr': '<f4', 'fortran_order': False, 'shape': (${t.shape.join(', ')}${t.shape.length === 1 ? ',' : ''}), }`;
  h += ' '.repeat(64 - ((10 + h.length + 1) % 64)) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head.writeUInt16LE(h.length, 8);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(h, 'latin1'), Buffer.from(t.dataSync().buffer)]));
}

// Predictions and gradients: Y = model(x) at inference (Dropout off, BatchNormalization on its
// moving statistics), loss = sum(Y * R); gradients with respect to x and every trainable weight.
// (TF.js has no gradient for dilated convolutions: grads false writes the predictions only, and
// test_tfjs checks lithe's gradients by finite differences.)
function oracle(name, model, x, grads_too = true) {
  for (const w of model.weights) golden(`${name}.w.${w.originalName}`, w.read()); // the weights lithe must hold
  golden(`${name}.x`, x);
  const y = model.apply(x, { training: false });
  golden(`${name}.y`, y);
  const r = uniform(y.shape, -1, 1);
  golden(`${name}.r`, r);
  if (!grads_too) return;
  if (!name.startsWith('text')) { // ids into an Embedding: no gradient
    const dx = tf.grad((xx) => tf.sum(tf.mul(model.apply(xx, { training: false }), r)))(x);
    golden(`${name}.dx`, dx);
  }
  const vars = model.trainableWeights.map((w) => w.read());
  const { grads } = tf.variableGrads(() => tf.sum(tf.mul(model.apply(x, { training: false }), r)), vars);
  model.trainableWeights.forEach((w, i) => golden(`${name}.grad.${w.originalName}`, grads[vars[i].name]));
  lines.push(`${name}.n_params i 0 ${model.trainableWeights.length}`);
}

// 1. An MLP through every activation (Dense's and the activation layers').
{
  const m = tf.sequential({ name: 'mlp' });
  m.add(tf.layers.dense({ inputShape: [6], units: 8, activation: 'relu' }));
  const acts = ['tanh', 'sigmoid', 'elu', 'selu', 'softplus', 'softsign', 'swish', 'relu6', 'hardSigmoid', 'mish',
                'gelu', 'linear'];
  for (const a of acts) m.add(tf.layers.dense({ units: 7, activation: a }));
  m.add(tf.layers.leakyReLU({ alpha: 0.2 }));
  m.add(tf.layers.dense({ units: 6, useBias: false }));
  m.add(tf.layers.reLU({ maxValue: 0.8 }));
  m.add(tf.layers.dense({ units: 5 }));
  m.add(tf.layers.elu());
  m.add(tf.layers.dense({ units: 4, activation: 'softmax' }));
  randomize(m);
  await saveFiles(m, path.join(out, 'mlp'));
  oracle('mlp', m, uniform([3, 6], -2, 2));

  // the same weights quantized to uint8 as tensorflowjs_converter --quantize_uint8 stores them
  // (v = q scale + min); TF.js itself loads them back and predicts: the oracle of dequantization
  const { json, data, specs } = await saveFiles(m, path.join(out, 'mlp_uint8'));
  const f32 = new Float32Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength));
  const q = [], weights = [];
  let at = 0;
  for (const s of specs) {
    const n = s.shape.reduce((a, b) => a * b, 1), v = f32.subarray(at, at + n);
    at += n;
    let lo = Math.min(...v), hi = Math.max(...v);
    if (hi === lo) hi = lo + 1;
    const scale = (hi - lo) / 255;
    for (const x of v) q.push(Math.round((x - lo) / scale));
    weights.push({ ...s, quantization: { dtype: 'uint8', scale, min: lo } });
  }
  const qbytes = Uint8Array.from(q);
  json.weightsManifest = [{ paths: ['weights.bin'], weights }];
  fs.rmSync(path.join(out, 'mlp_uint8'), { recursive: true });
  fs.mkdirSync(path.join(out, 'mlp_uint8'));
  fs.writeFileSync(path.join(out, 'mlp_uint8', 'model.json'), JSON.stringify(json));
  fs.writeFileSync(path.join(out, 'mlp_uint8', 'weights.bin'), qbytes);
  const mq = await tf.loadLayersModel(tf.io.fromMemory({ modelTopology: json.modelTopology, weightSpecs: weights,
                                                         weightData: qbytes.buffer }));
  const xq = uniform([3, 6], -2, 2);
  golden('mlp_uint8.x', xq);
  golden('mlp_uint8.y', mq.predict(xq));
}

// 2. A CNN: Conv2D same and valid with strides, BatchNormalization with non-trivial moving
// statistics, MaxPooling2D with same padding (a partial window), AveragePooling2D, Dropout,
// Flatten (Dense after Flatten: TF.js's NHWC order of the flattened features), Dense softmax.
// Its weights are split into two shards at a byte offset inside a weight.
{
  const m = tf.sequential({ name: 'cnn' });
  m.add(tf.layers.conv2d({ inputShape: [9, 9, 3], filters: 4, kernelSize: 3, padding: 'same', activation: 'relu' }));
  m.add(tf.layers.conv2d({ filters: 6, kernelSize: [3, 2], strides: 2, padding: 'valid' }));
  m.add(tf.layers.batchNormalization());
  m.add(tf.layers.activation({ activation: 'tanh' }));
  m.add(tf.layers.maxPooling2d({ poolSize: 2, strides: 1, padding: 'same' }));
  m.add(tf.layers.averagePooling2d({ poolSize: 2, strides: 2, padding: 'valid' }));
  m.add(tf.layers.dropout({ rate: 0.3 }));
  m.add(tf.layers.flatten());
  m.add(tf.layers.dense({ units: 5, activation: 'softmax' }));
  randomize(m);
  await saveFiles(m, path.join(out, 'cnn'), { shards: 2 });
  const x = uniform([2, 9, 9, 3], -1, 1);
  oracle('cnn', m, x);
  npy(path.join(out, 'cnn', 'x.npy'), x);
  npy(path.join(out, 'cnn', 'y_tfjs.npy'), m.predict(x));
}

// 3. A functional model: two branches (a dilated Conv2D and a DepthwiseConv2D after
// ZeroPadding2D) concatenated on channels, added to a 1x1 Conv2D, max-pooled valid, average-pooled
// same (partial windows: TF.js's own gradient of that is wrong, it divides by the whole window
// where its forward divides by the part inside the image), then GlobalAveragePooling2D, BatchNormalization on a 2-D tensor, Dense; a second path through
// Flatten and Reshape, merged by Multiply / Average. Weights in two manifest groups.
{
  const inp = tf.input({ shape: [8, 8, 2], name: 'image' });
  const a = tf.layers.conv2d({ filters: 3, kernelSize: 3, dilationRate: 2, padding: 'same', activation: 'selu', name: 'dil' }).apply(inp);
  const p = tf.layers.zeroPadding2d({ padding: [[1, 0], [0, 1]], name: 'pad' }).apply(inp);
  const b = tf.layers.depthwiseConv2d({ kernelSize: 2, depthMultiplier: 2, name: 'dw' }).apply(p);
  const c = tf.layers.concatenate({ name: 'cat' }).apply([a, b]);
  const d = tf.layers.conv2d({ filters: 7, kernelSize: 1, name: 'pw' }).apply(inp);
  const e = tf.layers.add({ name: 'sum' }).apply([c, d]);
  const f = tf.layers.maxPooling2d({ poolSize: 2, name: 'pool' }).apply(e);
  const fa = tf.layers.averagePooling2d({ poolSize: 3, strides: 1, padding: 'same', name: 'avg3' }).apply(f);
  const g = tf.layers.globalAveragePooling2d({ name: 'gap' }).apply(fa);
  const h = tf.layers.batchNormalization({ name: 'bn' }).apply(g);
  const i = tf.layers.dense({ units: 4, activation: 'tanh', name: 'fc' }).apply(h);
  const j = tf.layers.flatten({ name: 'flat' }).apply(fa);
  const k = tf.layers.dense({ units: 4, name: 'fc2' }).apply(j);
  const l = tf.layers.reshape({ targetShape: [2, 2], name: 'rs' }).apply(k);
  const l2 = tf.layers.flatten({ name: 'flat2' }).apply(l);
  const mm = tf.layers.multiply({ name: 'mul' }).apply([i, l2]);
  const o = tf.layers.average({ name: 'avg' }).apply([mm, i]);
  const model = tf.model({ inputs: inp, outputs: o, name: 'branches' });
  randomize(model);
  const n = model.getWeights().length;
  await saveFiles(model, path.join(out, 'branches'), { groups: [5, n - 5] });
  oracle('branches', model, uniform([2, 8, 8, 2], -1, 1), false);
}

// 4. Text: Embedding (ids as floats, as TF.js feeds them), LayerNormalization,
// GlobalAveragePooling1D, Dense softmax.
{
  const m = tf.sequential({ name: 'text' });
  m.add(tf.layers.embedding({ inputDim: 11, outputDim: 5, inputLength: 6 }));
  m.add(tf.layers.layerNormalization());
  m.add(tf.layers.globalAveragePooling1d());
  m.add(tf.layers.dense({ units: 3, activation: 'softmax' }));
  randomize(m);
  await saveFiles(m, path.join(out, 'text'));
  const ids = tf.tensor(Float32Array.from({ length: 12 }, () => Math.floor(rand() * 11)), [2, 6]);
  oracle('text', m, ids);
}

// 4b. A text CNN: Embedding, Conv1D same and strided valid, MaxPooling1D, AveragePooling1D,
// GlobalMaxPooling1D, Dense softmax.
{
  const m = tf.sequential({ name: 'text_cnn' });
  m.add(tf.layers.embedding({ inputDim: 13, outputDim: 4, inputLength: 9 }));
  m.add(tf.layers.conv1d({ filters: 5, kernelSize: 3, padding: 'same', activation: 'relu' }));
  m.add(tf.layers.maxPooling1d({ poolSize: 2, padding: 'same' }));
  m.add(tf.layers.conv1d({ filters: 3, kernelSize: 2, strides: 2, activation: 'tanh' }));
  m.add(tf.layers.averagePooling1d({ poolSize: 1 }));
  m.add(tf.layers.globalMaxPooling1d());
  m.add(tf.layers.dense({ units: 2, activation: 'softmax' }));
  randomize(m);
  await saveFiles(m, path.join(out, 'text_cnn'));
  const ids = tf.tensor(Float32Array.from({ length: 18 }, () => Math.floor(rand() * 13)), [2, 9]);
  oracle('text_cnn', m, ids);
}

// 5. SeparableConv2D, UpSampling2D (nearest), a strided Conv2D after it. One sample: TF.js's
// gradient of UpSampling2D is wrong beyond the first item of a batch (its CPU backend's
// resizeNearestNeighbor gradient; finite differences agree with lithe, not with TF.js).
{
  const m = tf.sequential({ name: 'upsep' });
  m.add(tf.layers.separableConv2d({ inputShape: [5, 5, 2], filters: 4, kernelSize: 3, depthMultiplier: 2, padding: 'same',
                                    activation: 'relu' }));
  m.add(tf.layers.upSampling2d({ size: [2, 3] }));
  m.add(tf.layers.conv2d({ filters: 2, kernelSize: 3, strides: 2 }));
  m.add(tf.layers.flatten());
  m.add(tf.layers.dense({ units: 3 }));
  randomize(m);
  await saveFiles(m, path.join(out, 'upsep'));
  oracle('upsep', m, uniform([1, 5, 5, 2], -1, 1));
}

fs.writeFileSync(path.join(out, 'tfjs_goldens.txt'), lines.join('\n') + '\n');
console.log(`gen_tfjs_goldens: wrote ${lines.length - 1} arrays and 7 models to ${out}`);
