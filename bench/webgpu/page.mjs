// bench/runners/webgpu.mjs's page: lithe (WebGPU module), tfjs-backend-webgpu and onnxruntime-web's
// WebGPU EP on navigator.gpu's adapter, each row timed the same way, with dispatches, submits and
// read-backs counted by wrapping the WebGPU calls every implementation makes.
import * as lithe from '/lithe/src/index.js';

const q = new URLSearchParams(location.search);
const quick = q.get('quick') === '1', maxS = Number(q.get('maxS') ?? 20);
const log = (s) => { document.getElementById('log').textContent += `${s}\n`; console.log(s); };
const bench = (window.bench = { done: false, rows: [], info: {} });

// one counter for everyone
const counts = { dispatches: 0, submits: 0, readbacks: 0 };
const wrap = (proto, name, key) => {
  const f = proto[name];
  proto[name] = function (...a) { counts[key]++; return f.apply(this, a); };
};
wrap(GPUComputePassEncoder.prototype, 'dispatchWorkgroups', 'dispatches');
wrap(GPUQueue.prototype, 'submit', 'submits');
wrap(GPUBuffer.prototype, 'mapAsync', 'readbacks');

async function input(name) {
  const res = await fetch(`/input/${name}`);
  const buf = await res.arrayBuffer();
  const shape = res.headers.get('x-shape').split(',').map(Number);
  const T = { Float32Array, Int32Array, BigInt64Array }[res.headers.get('x-dtype')];
  return { data: new T(buf), shape };
}
const bytes = async (file) => new Uint8Array(await (await fetch(`/models/${file}`)).arrayBuffer());

// warm-up, then the median; counts per run over the timed runs
async function time(fn) {
  const warm = quick ? 1 : 2, minRuns = quick ? 3 : 5, minMs = quick ? 0 : 2000;
  for (let i = 0; i < warm; i++) await fn();
  const t = [], c0 = { ...counts }, start = performance.now();
  while (t.length < minRuns || (performance.now() - start < minMs && performance.now() - start < maxS * 1000)) {
    const a = performance.now();
    await fn();
    t.push(performance.now() - a);
    if (t.length >= 3 && performance.now() - start > maxS * 1000) break;
  }
  t.sort((a, b) => a - b);
  const n = t.length, per = (k) => Math.round(((counts[k] - c0[k]) / n) * 10) / 10;
  return { median_ms: n % 2 ? t[(n - 1) / 2] : (t[n / 2 - 1] + t[n / 2]) / 2, runs: n, dispatches: per('dispatches'), submits: per('submits'), readbacks: per('readbacks') };
}
async function row(workload, impl, fn) {
  let r;
  try {
    r = await fn();
  } catch (e) {
    const m = /lacks primitive '([a-z0-9_]+)'/.exec(e?.message ?? '');
    r = m ? { unsupported: m[1] } : { error: String(e?.message ?? e) };
  }
  bench.rows.push({ workload, impl, ...r });
  log(`${workload} ${impl}: ${JSON.stringify(r)}`);
}

async function main() {
  const info = await lithe.init({ device: 'webgpu' });
  if (info.device !== 'webgpu') throw new Error(`lithe found no WebGPU adapter: ${info.deviceReason}`);
  const a = lithe.device().info;
  bench.info = { adapter: `${a?.vendor ?? '?'} / ${a?.architecture ?? '?'}`, chromium: navigator.userAgent.match(/Chrome\/([\d.]+)/)?.[1],
    subgroups: !!(a && 'subgroupMinSize' in a) };
  await tf.setBackend('webgpu');
  await tf.ready();
  ort.env.wasm.wasmPaths = '/nm/onnxruntime-web/dist/';
  ort.env.wasm.numThreads = 1;
  const names = (q.get('inputs') ?? '').split(',');

  // ---- the MLP training step (784-512-512-10 Relu, batch 64, Adam, the loss read back) ----
  if (names.includes('train_x')) {
    const x = await input('train_x'), y = await input('train_y');
    const labels = Int32Array.from(y.data, Number);
    await row('mlp_train_b64', 'lithe', async () => {
      const m = lithe.loadBytes(await bytes('mlp.lithe'));
      await m.to('webgpu');
      const opt = lithe.adam({ learnRate: 0.001 });
      const xt = lithe.tensor(x.data, x.shape);
      return time(() => m.trainStepAsync({ x: xt, y: labels, optimizer: opt }));
    });
    await row('mlp_train_b64', 'tfjs', async () => {
      const m = tf.sequential();
      m.add(tf.layers.dense({ inputShape: [784], units: 512, activation: 'relu' }));
      m.add(tf.layers.dense({ units: 512, activation: 'relu' }));
      m.add(tf.layers.dense({ units: 10 }));
      const xt = tf.tensor2d(x.data, x.shape), yt = tf.oneHot(tf.tensor1d(labels, 'int32'), 10);
      const opt = tf.train.adam(0.001);
      return time(async () => {
        const loss = opt.minimize(() => tf.losses.softmaxCrossEntropy(yt, m.apply(xt)), true);
        await loss.data();
        loss.dispose();
      });
    });
  }
  // ---- predictions ----
  const tfModels = {
    mlp: () => {
      const m = tf.sequential();
      m.add(tf.layers.dense({ inputShape: [784], units: 512, activation: 'relu' }));
      m.add(tf.layers.dense({ units: 512, activation: 'relu' }));
      m.add(tf.layers.dense({ units: 10 }));
      return m;
    },
    cnn: () => {
      const m = tf.sequential();
      m.add(tf.layers.conv2d({ inputShape: [28, 28, 1], filters: 16, kernelSize: 5, padding: 'same', activation: 'relu' }));
      m.add(tf.layers.maxPooling2d({ poolSize: 2 }));
      m.add(tf.layers.conv2d({ filters: 32, kernelSize: 5, padding: 'same', activation: 'relu' }));
      m.add(tf.layers.maxPooling2d({ poolSize: 2 }));
      m.add(tf.layers.flatten());
      m.add(tf.layers.dense({ units: 128, activation: 'relu' }));
      m.add(tf.layers.dense({ units: 10 }));
      return m;
    },
  };
  for (const [wl, model] of [['mlp_b64', 'mlp'], ['cnn_b32', 'cnn'], ['mobilenet_v2_b1', 'mobilenet_v2'], ['transformer_b1', 'transformer']]) {
    if (!names.includes(wl)) continue;
    const x = await input(wl);
    const onnx = await bytes(`${model}.onnx`);
    await row(wl, 'lithe', async () => {
      const m = await lithe.load(onnx);
      await m.to('webgpu');
      const xt = lithe.tensor(x.data, x.shape);
      return time(() => m.predictAsync(xt));
    });
    if (tfModels[model])
      await row(wl, 'tfjs', async () => {
        const m = tfModels[model]();
        const shape = model === 'cnn' ? [x.shape[0], 28, 28, 1] : x.shape;
        const xt = tf.tensor(x.data, shape);
        return time(async () => {
          const y = m.predict(xt);
          await y.data();
          y.dispose();
        });
      });
    await row(wl, 'ort', async () => {
      const s = await ort.InferenceSession.create(onnx, { executionProviders: ['webgpu'] });
      const feeds = { [s.inputNames[0]]: new ort.Tensor(x.data instanceof BigInt64Array ? 'int64' : 'float32', x.data, x.shape) };
      return time(async () => {
        const r = await s.run(feeds);
        await r[s.outputNames[0]].getData();
      });
    });
  }
}

main().catch((e) => { bench.info.error = String(e?.stack ?? e); }).finally(() => { bench.done = true; });
