// TensorFlow.js 4.22 with its WebAssembly backend (SIMD binary; the threaded binary is switched
// off, so one thread): tfjs cannot load ONNX, so the MLP and the CNN are rebuilt in tfjs-layers
// with the same weights (bench/make_models.py's weights/*.npy; conv kernels OIHW -> HWIO, the
// flatten order NCHW -> NHWC folded into fc1). mobilenet_v2 and the transformer are not rebuilt.
// Latency = predict + dataSync. Training (--train-workloads): the MLP (batch 64) and the CNN (batch
// 32), Adam(0.001), softmax cross-entropy on logits.
//   node tfjs.mjs --dir BUILD/bench [--backend wasm|cpu] [--quick] [--workloads a,b] [--only infer,train]
import path from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import * as tfl from '@tensorflow/tfjs-layers';
import '@tensorflow/tfjs-backend-cpu';
import { setThreadsCount } from '@tensorflow/tfjs-backend-wasm';
import { npyRead, maxAbsErr, parseArgs, measure, emit, pkgVersion, WORKLOADS } from './common.mjs';

const o = parseArgs(process.argv.slice(2));
const backend = o.backend ?? 'wasm';
if (backend === 'wasm') {
  tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', false);
  setThreadsCount(1);
}
await tf.setBackend(backend);
await tf.ready();
const simd = backend === 'wasm' ? await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT') : false;
const name = `tfjs ${pkgVersion('@tensorflow/tfjs-core')}`;
const config = backend === 'wasm' ? `wasm backend, ${simd ? 'SIMD' : 'no SIMD'} binary, 1 thread` : 'cpu backend (JS)';
const W = (model, p) => npyRead(path.join(o.dir, 'weights', `${model}.${p}.npy`));

// torch Linear (out, in) -> tfjs Dense kernel (in, out)
function dense(w) {
  const [nO, nI] = w.shape;
  const k = new Float32Array(nI * nO);
  for (let i = 0; i < nO; i++) for (let j = 0; j < nI; j++) k[j * nO + i] = w.data[i * nI + j];
  return tf.tensor2d(k, [nI, nO]);
}
// torch Conv2d (O, I, H, W) -> tfjs conv2d kernel (H, W, I, O)
function conv(w) {
  const [O, I, H, Wd] = w.shape;
  const k = new Float32Array(O * I * H * Wd);
  for (let a = 0; a < O; a++) for (let b = 0; b < I; b++) for (let h = 0; h < H; h++) for (let x = 0; x < Wd; x++)
    k[((h * Wd + x) * I + b) * O + a] = w.data[((a * I + b) * H + h) * Wd + x];
  return tf.tensor4d(k, [H, Wd, I, O]);
}
const vec = (w) => tf.tensor1d(w.data);

function buildMlp() {
  const m = tfl.sequential();
  m.add(tfl.layers.dense({ inputShape: [784], units: 512, activation: 'relu' }));
  m.add(tfl.layers.dense({ units: 512, activation: 'relu' }));
  m.add(tfl.layers.dense({ units: 10 }));
  m.layers.forEach((l, i) => l.setWeights([dense(W('mlp', `fc${i + 1}.weight`)), vec(W('mlp', `fc${i + 1}.bias`))]));
  return m;
}

function buildCnn() {
  const m = tfl.sequential();
  m.add(tfl.layers.conv2d({ inputShape: [28, 28, 1], filters: 16, kernelSize: 5, padding: 'same', activation: 'relu' }));
  m.add(tfl.layers.maxPooling2d({ poolSize: 2 }));
  m.add(tfl.layers.conv2d({ filters: 32, kernelSize: 5, padding: 'same', activation: 'relu' }));
  m.add(tfl.layers.maxPooling2d({ poolSize: 2 }));
  m.add(tfl.layers.flatten());
  m.add(tfl.layers.dense({ units: 128, activation: 'relu' }));
  m.add(tfl.layers.dense({ units: 10 }));
  m.layers[0].setWeights([conv(W('cnn', 'conv1.weight')), vec(W('cnn', 'conv1.bias'))]);
  m.layers[2].setWeights([conv(W('cnn', 'conv2.weight')), vec(W('cnn', 'conv2.bias'))]);
  // fc1 reads torch's NCHW flatten (c*49 + h*7 + w); tfjs flattens NHWC (h*224 + w*32 + c)
  const f = W('cnn', 'fc1.weight');
  const k = new Float32Array(1568 * 128);
  for (let out = 0; out < 128; out++) for (let c = 0; c < 32; c++) for (let h = 0; h < 7; h++) for (let x = 0; x < 7; x++)
    k[(h * 224 + x * 32 + c) * 128 + out] = f.data[out * 1568 + c * 49 + h * 7 + x];
  m.layers[5].setWeights([tf.tensor2d(k, [1568, 128]), vec(W('cnn', 'fc1.bias'))]);
  m.layers[6].setWeights([dense(W('cnn', 'fc2.weight')), vec(W('cnn', 'fc2.bias'))]);
  return m;
}

const models = {};
const groups = o.only ?? ['infer', 'train'];
if (groups.includes('infer')) {
  for (const wl of o.workloads ?? Object.keys(WORKLOADS)) {
    const model = WORKLOADS[wl];
    const rec = { group: 'infer', workload: wl, runner: name, impl: backend === 'wasm' ? 'wasm' : 'js', threads: 1, config };
    if (model !== 'mlp' && model !== 'cnn') {
      emit({ ...rec, skipped: 'tfjs cannot load ONNX; this model is not rebuilt in tfjs-layers' });
      continue;
    }
    try {
      models[model] ??= model === 'mlp' ? buildMlp() : buildCnn();
      const x = npyRead(path.join(o.dir, `${wl}_x.npy`));
      const ref = npyRead(path.join(o.dir, `${wl}_ref.npy`));
      // NCHW with C = 1 is NHWC: the same bytes
      const shape = model === 'cnn' ? [x.shape[0], 28, 28, 1] : x.shape;
      const xt = tf.tensor(x.data, shape);
      let y;
      const st = await measure(() => {
        const out = models[model].predict(xt);
        y = out.dataSync();
        out.dispose();
      }, o);
      emit({ ...rec, ...st, ...maxAbsErr(y, ref.data), ref: 'torch output, same weights rebuilt in tfjs-layers' });
    } catch (e) {
      emit({ ...rec, error: String(e.message ?? e).split('\n')[0] });
    }
  }
}
// training: the MLP (train_x / train_y, batch 64) and the CNN (cnn_train_b32_x / _y, batch 32,
// NCHW with C = 1 read as NHWC), each from the same weights as lithe and PyTorch
const TRAIN = { mlp_train_b64: ['mlp', 'train_x.npy', 'train_y.npy'],
                cnn_train_b32: ['cnn', 'cnn_train_b32_x.npy', 'cnn_train_b32_y.npy'] };
for (const wl of groups.includes('train') ? o.trainWorkloads ?? ['mlp_train_b64'] : []) {
  const rec = { group: 'train', workload: wl, runner: name, impl: backend === 'wasm' ? 'wasm' : 'js',
                threads: 1, config: `${config}, Adam(0.001), softmax cross-entropy` };
  if (!TRAIN[wl]) {
    emit({ ...rec, skipped: 'tfjs cannot load ONNX; this model is not rebuilt in tfjs-layers' });
    continue;
  }
  // tfjs-backend-wasm 4.22 registers no convolution gradient kernels: it cannot train the CNN
  const missing = model => (model === 'cnn' ? ['Conv2DBackpropFilter', 'Conv2DBackpropInput'] : [])
    .filter((k) => !tf.getKernel(k, backend));
  if (missing(TRAIN[wl][0]).length) {
    emit({ ...rec, skipped: `tfjs's ${backend} backend has no ${missing(TRAIN[wl][0]).join(' / ')} kernel (cannot train a conv)` });
    continue;
  }
  try {
    const [model, xFile, yFile] = TRAIN[wl];
    const m = model === 'mlp' ? buildMlp() : buildCnn();
    const x = npyRead(path.join(o.dir, xFile));
    const lab = npyRead(path.join(o.dir, yFile));
    const xt = tf.tensor(x.data, model === 'cnn' ? [x.shape[0], 28, 28, 1] : x.shape);
    const yt = tf.oneHot(tf.tensor1d(lab.data, 'int32'), 10);
    const opt = tf.train.adam(0.001);
    const vars = m.trainableWeights.map((w) => w.read());
    let first = null, last;
    const step = () => {
      const loss = opt.minimize(() => tf.losses.softmaxCrossEntropy(yt, m.apply(xt)), true, vars);
      last = loss.dataSync()[0];
      if (first === null) first = last;
      loss.dispose();
    };
    const st = await measure(step, { ...o, maxS: o.maxS });
    emit({ ...rec, ...st, first_loss: first, last_loss: last });
  } catch (e) {
    emit({ ...rec, error: String(e.message ?? e).split('\n')[0] });
  }
}
process.exit(0);
