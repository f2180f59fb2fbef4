// The demo page: the npm package in a plain <script type="module"> (web/index.html maps the
// name "lithe-wasm" to /lithe/src/index.js). Everything the model does here — predict, resize, the
// training steps — is lithe's C code in WebAssembly; this file only moves pixels and draws.
import * as lithe from 'lithe-wasm';

const NAMES = ['T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat', 'Sandal', 'Shirt', 'Sneaker', 'Bag', 'Ankle boot'];
const NEW_CLASS = 9; // the class `train-mnist --classes 9` left out
const D = 784;
const $ = (id) => document.getElementById(id);

// State the browser test reads (web/test/demo.test.mjs).
const demo = (window.demo = { ready: false, done: false, error: null, losses: [], picked: [], before: null, after: null });

async function gunzip(url) {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return new Uint8Array(await new Response(res.body.pipeThrough(new DecompressionStream('gzip'))).arrayBuffer());
}

function pixels(images, i) {
  return images.subarray(16 + i * D, 16 + (i + 1) * D);
}
function batchOf(images, idxs) {
  const x = new Float32Array(idxs.length * D);
  idxs.forEach((k, r) => {
    const p = pixels(images, k);
    for (let j = 0; j < D; j++) x[r * D + j] = p[j] / 255;
  });
  return lithe.tensor(x, [idxs.length, D]);
}
function cell(images, k, caption, cls) {
  const div = document.createElement('div');
  div.className = `cell ${cls ?? ''}`;
  div.dataset.index = String(k);
  const c = document.createElement('canvas');
  c.width = c.height = 28;
  const ctx = c.getContext('2d');
  const img = ctx.createImageData(28, 28);
  const p = pixels(images, k);
  for (let j = 0; j < D; j++) img.data.set([p[j], p[j], p[j], 255], 4 * j);
  ctx.putImageData(img, 0, 0);
  const label = document.createElement('div');
  label.textContent = caption;
  div.append(c, label);
  return div;
}

function predictAll(model, images, idxs, batch = 500) {
  const out = new Int32Array(idxs.length);
  for (let s = 0; s < idxs.length; s += batch) out.set(model.predict(batchOf(images, idxs.slice(s, s + batch))).argmax(), s);
  return out;
}

// Accuracy on the old classes and recall of the new one over the held-out images.
function evaluate(model, images, labels, heldout, names) {
  const pred = predictAll(model, images, heldout);
  let oldN = 0, oldOk = 0, newN = 0, newOk = 0;
  heldout.forEach((k, i) => {
    if (labels[8 + k] === NEW_CLASS) { newN++; newOk += pred[i] === names.length - 1 && names.length > NEW_CLASS; }
    else { oldN++; oldOk += pred[i] === labels[8 + k]; }
  });
  return { oldAcc: oldOk / oldN, newRecall: newOk / newN, n: heldout.length };
}

function showGrid(el, model, images, labels, idxs, names) {
  el.replaceChildren();
  const pred = predictAll(model, images, idxs);
  idxs.forEach((k, i) => {
    const truth = labels[8 + k];
    const ok = truth === NEW_CLASS ? names.length > NEW_CLASS && pred[i] === names.length - 1 : pred[i] === truth;
    el.append(cell(images, k, names[pred[i]], ok ? 'ok' : 'bad'));
  });
}

function plotLoss(losses, steps) {
  const c = $('loss'), ctx = c.getContext('2d');
  ctx.clearRect(0, 0, c.width, c.height);
  if (!losses.length) return;
  const max = Math.max(...losses) * 1.05, pad = 28;
  const X = (i) => pad + ((c.width - pad - 8) * i) / Math.max(1, steps - 1);
  const Y = (v) => c.height - pad - ((c.height - pad - 8) * v) / max;
  ctx.strokeStyle = '#999';
  ctx.beginPath();
  ctx.moveTo(pad, 8);
  ctx.lineTo(pad, c.height - pad);
  ctx.lineTo(c.width - 8, c.height - pad);
  ctx.stroke();
  ctx.fillStyle = '#555';
  ctx.font = '11px sans-serif';
  ctx.fillText(`loss (max ${max.toFixed(3)})`, pad + 4, 18);
  ctx.fillText('step', c.width - 36, c.height - 10);
  const line = (vals, color, width) => {
    ctx.strokeStyle = color;
    ctx.lineWidth = width;
    ctx.beginPath();
    vals.forEach((v, i) => (i ? ctx.lineTo(X(i), Y(v)) : ctx.moveTo(X(i), Y(v))));
    ctx.stroke();
    ctx.lineWidth = 1;
  };
  line(losses, '#9bd', 1);
  const avg = losses.map((_, i) => {
    const w = losses.slice(Math.max(0, i - 9), i + 1);
    return w.reduce((a, b) => a + b, 0) / w.length;
  });
  line(avg, '#15a', 2);
}

async function main() {
  const t0 = performance.now();
  // ?threads=N asks for N threads (the threads build, when the page is cross-origin isolated:
  // node serve.mjs --isolate); without it the package's default applies. Elsewhere: one thread.
  const threadsParam = new URLSearchParams(location.search).get('threads');
  const threads = threadsParam ? Number(threadsParam) : undefined;
  // ?relaxed=0 refuses the relaxed-SIMD build (f32x4.relaxed_madd: fused, so other bits than the
  // SIMD128 and threads builds), which the package loads on one thread where the browser has it
  const relaxed = new URLSearchParams(location.search).get('relaxed') === '0' ? false : undefined;
  // ?gpu=1 ticks "train on the GPU" (the fine-tuning worker then asks for WebGPU)
  if (new URLSearchParams(location.search).get('gpu') === '1') $('gpu').checked = true;
  const info = await lithe.init({ ...(threads ? { threads } : {}), ...(relaxed === false ? { relaxed } : {}) });
  let model = await lithe.load('/model/fashion9.lithe');
  const [images, labels] = await Promise.all([gunzip('/data/t10k-images-idx3-ubyte.gz'), gunzip('/data/t10k-labels-idx1-ubyte.gz')]);
  const probe = model.predict(batchOf(images, [0]));
  const nOld = probe.shape[1];
  const startMs = performance.now() - t0;
  let names = NAMES.slice(0, nOld);
  demo.simd = info.simd;
  demo.build = info.build;
  demo.threads = info.threads;
  demo.isolated = globalThis.crossOriginIsolated === true;
  demo.startMs = startMs;
  const buildName = info.build === 'simd-threads' ? `WebAssembly SIMD128 + threads (${info.threads})` :
    info.build === 'relaxed-simd' ? 'WebAssembly relaxed SIMD' : info.simd ? 'WebAssembly SIMD128' : 'scalar WebAssembly';
  $('status').textContent = `lithe ${info.version}, ${buildName} build; ` +
    `model ${model.name} with ${nOld} classes; ready in ${startMs.toFixed(0)} ms (init, model, data, first prediction)`;

  // t10k: 0..4999 to pick from and to replay, 5000..9999 held out for measuring.
  const pool = [], heldout = [];
  for (let k = 0; k < 10000; k++) (k < 5000 ? pool : heldout).push(k);
  const lab = (k) => labels[8 + k];
  const sample = [...heldout.filter((k) => lab(k) !== NEW_CLASS).slice(0, 18), ...heldout.filter((k) => lab(k) === NEW_CLASS).slice(0, 6)];
  sample.sort((a, b) => a - b);
  showGrid($('before'), model, images, labels, sample, names);
  demo.before = evaluate(model, images, labels, heldout, names);
  $('before-acc').textContent = `held-out accuracy on the ${nOld} known classes: ${(100 * demo.before.oldAcc).toFixed(1)}%; ` +
    `${NAMES[NEW_CLASS].toLowerCase()}s recognised: ${(100 * demo.before.newRecall).toFixed(0)}% (it has no such class)`;

  // The gallery to pick from: 16 of the new class among 24 others, in data order.
  const gallery = [...pool.filter((k) => lab(k) === NEW_CLASS).slice(0, 16), ...pool.filter((k) => lab(k) !== NEW_CLASS).slice(0, 24)];
  gallery.sort((a, b) => a - b);
  const picked = new Set();
  for (const k of gallery) {
    const div = cell(images, k, '', '');
    div.addEventListener('click', () => {
      if (picked.has(k)) picked.delete(k);
      else picked.add(k);
      div.classList.toggle('picked', picked.has(k));
      demo.picked = [...picked];
      $('picked-count').textContent = `${picked.size} picked`;
      $('train').disabled = picked.size < 5 || demo.done;
    });
    $('gallery').append(div);
  }
  // Old examples replayed during fine-tuning so the known classes are not forgotten.
  const replay = pool.filter((k) => lab(k) !== NEW_CLASS && !gallery.includes(k)).slice(0, 600);
  demo.ready = true;

  $('train').addEventListener('click', async () => {
    $('train').disabled = true;
    try {
      const steps = Math.max(10, Math.min(1000, Number($('steps').value) || 80));
      const newName = $('class-name').value.trim() || 'new class';
      // Fine-tuning runs in a Web Worker with its own lithe instance: it gets this model as
      // .lithe bytes and sends the fine-tuned one back the same way.
      const picked8 = new Uint8Array(picked.size * D), replay8 = new Uint8Array(replay.length * D);
      [...picked].forEach((k, i) => picked8.set(pixels(images, k), i * D));
      replay.forEach((k, i) => replay8.set(pixels(images, k), i * D));
      const worker = new Worker(new URL('train-worker.js', import.meta.url), { type: 'module' });
      const tStart = performance.now();
      const result = await new Promise((resolve, reject) => {
        worker.onerror = (e) => reject(new Error(e.message || 'the training worker failed'));
        worker.onmessage = ({ data }) => {
          if (data.type === 'error') reject(new Error(data.message));
          else if (data.type === 'done') resolve(data);
          else if (data.type === 'device') {
            // where the worker trains: the GPU (WebGPU), or the CPU with the reason it fell back
            demo.device = data.device;
            demo.deviceReason = data.reason;
            $('gpu-text').textContent = data.device === 'webgpu'
              ? `training on the GPU: ${data.adapter} (WebGPU)`
              : `no GPU here, training on the CPU: ${data.reason}`;
          } else {
            demo.losses.push(data.loss);
            const step = data.step;
            if (data.gpu) {
              // the GPU's work per step: dispatches, submits, read-backs (the recorder's counters)
              demo.gpu = data.gpu;
              $('gpu-text').textContent = `GPU step ${step + 1}: ${data.gpu.dispatches} dispatches, ${data.gpu.submits} submits, ` +
                `${data.gpu.readbacks} read-back per step; ${data.gpu.ms.toFixed(1)} ms/step`;
            }
            if (step % 4 === 3 || step === steps - 1) {
              $('progress').value = (step + 1) / steps;
              $('progress-text').textContent = `step ${step + 1}/${steps}, loss ${data.loss.toFixed(4)}, ` +
                `${(((step + 1) * data.batch) / data.seconds).toFixed(0)} examples/s (in a Web Worker)`;
              plotLoss(demo.losses, steps);
            }
          }
        };
        worker.postMessage({ model: model.save(), nOld, steps, picked: picked8, replay: replay8,
          replayLabels: Int32Array.from(replay, lab), threads, relaxed, device: $('gpu').checked ? 'webgpu' : 'cpu' });
      });
      worker.terminate();
      demo.trainSeconds = result.seconds;
      demo.examplesPerSecond = (steps * 32) / result.seconds;
      demo.workerMs = performance.now() - tStart;
      demo.workerBuild = result.build;
      demo.workerThreads = result.threads;
      model.dispose();
      model = lithe.loadBytes(result.bytes);
      names = [...names, newName];
      showGrid($('after'), model, images, labels, sample, names);
      demo.after = evaluate(model, images, labels, heldout, names);
      $('after-acc').textContent = `held-out: ${(100 * demo.after.newRecall).toFixed(1)}% of ${newName.toLowerCase()}s recognised; ` +
        `known classes ${(100 * demo.after.oldAcc).toFixed(1)}% (was ${(100 * demo.before.oldAcc).toFixed(1)}%)`;
      const bytes = model.save();
      $('download').disabled = false;
      $('download').onclick = () => {
        const a = document.createElement('a');
        a.href = URL.createObjectURL(new Blob([bytes], { type: 'application/octet-stream' }));
        a.download = 'fashion10.lithe';
        a.click();
      };
      demo.savedBytes = bytes.length;
      demo.done = true;
    } catch (e) {
      demo.error = String(e?.message ?? e);
      $('progress-text').textContent = `error: ${demo.error}`;
      throw e;
    }
  });
}

main().catch((e) => {
  demo.error = String(e?.message ?? e);
  $('status').textContent = `error: ${demo.error}`;
  console.error(e);
});
