// finetune.html: loads the base CNN and the test images, starts a Web Worker (finetune-worker.js)
// per fine-tuning run, and draws what it reports: the loss per step, the memory of a step, the
// held-out accuracy, and the adapters and merged model to download.
import * as lithe from 'lithe-wasm';
import { MODES, OLD, NAMES, evaluate, split, idxPayload } from './finetune-core.js';

const $ = (id) => document.getElementById(id);
const KiB = (b) => `${(b / 1024).toFixed(0)} KiB`;
const MiB = (b) => `${(b / 1048576).toFixed(1)} MiB`;
const COLORS = { full: '#c33', last: '#393', lora: '#15a' };

// State the browser test reads (web/test/finetune.test.mjs).
const fine = (window.fine = { ready: false, busy: false, error: null, runs: {} });

async function gunzip(url) {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return new Uint8Array(await new Response(res.body.pipeThrough(new DecompressionStream('gzip'))).arrayBuffer());
}

function plot() {
  const c = $('loss'), ctx = c.getContext('2d');
  ctx.clearRect(0, 0, c.width, c.height);
  const runs = Object.entries(fine.runs);
  if (!runs.length) return;
  const all = runs.flatMap(([, r]) => r.losses);
  const max = Math.max(...all) * 1.05, n = Math.max(...runs.map(([, r]) => r.steps)), pad = 28;
  const X = (i) => pad + ((c.width - pad - 8) * i) / Math.max(1, n - 1);
  const Y = (v) => c.height - pad - ((c.height - pad - 8) * v) / max;
  ctx.strokeStyle = '#999';
  ctx.beginPath();
  ctx.moveTo(pad, 8);
  ctx.lineTo(pad, c.height - pad);
  ctx.lineTo(c.width - 8, c.height - pad);
  ctx.stroke();
  ctx.font = '11px sans-serif';
  ctx.fillStyle = '#555';
  ctx.fillText(`loss (max ${max.toFixed(2)}), 10-step mean`, pad + 4, 18);
  ctx.fillText('step', c.width - 36, c.height - 10);
  runs.forEach(([mode, r], k) => {
    ctx.strokeStyle = ctx.fillStyle = COLORS[mode];
    ctx.lineWidth = 2;
    ctx.beginPath();
    r.losses.forEach((_, i) => {
      const w = r.losses.slice(Math.max(0, i - 9), i + 1);
      const v = w.reduce((a, b) => a + b, 0) / w.length;
      if (i) ctx.lineTo(X(i), Y(v));
      else ctx.moveTo(X(i), Y(v));
    });
    ctx.stroke();
    ctx.fillText(mode, c.width - 60, 18 + 14 * k);
  });
  ctx.lineWidth = 1;
}

function row(table, mode, cells) {
  const body = $(table).tBodies[0];
  let tr = body.querySelector(`tr[data-mode="${mode}"]`);
  if (!tr) {
    tr = body.insertRow();
    tr.dataset.mode = mode;
  }
  tr.replaceChildren(...[table === 'memory' ? mode : MODES[mode].label, ...cells].map((t) => Object.assign(document.createElement('td'), { textContent: t })));
}

function offer(button, bytes, name) {
  button.disabled = !bytes;
  button.textContent = button.textContent.replace(/ — .*$/, '') + (bytes ? ` — ${KiB(bytes.length)}` : '');
  button.onclick = () => {
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([bytes], { type: 'application/octet-stream' }));
    a.download = name;
    a.click();
  };
}

async function main() {
  const relaxed = new URLSearchParams(location.search).get('relaxed') === '0' ? false : undefined;
  const info = await lithe.init(relaxed === false ? { relaxed } : {});
  const [base, imagesFile, labelsFile] = await Promise.all([
    fetch('/model/fashion-cnn8.lithe').then((r) => (r.ok ? r.arrayBuffer() : Promise.reject(new Error(`/model/fashion-cnn8.lithe: HTTP ${r.status}`)))),
    gunzip('/data/t10k-images-idx3-ubyte.gz'), gunzip('/data/t10k-labels-idx1-ubyte.gz')]);
  const baseBytes = new Uint8Array(base);
  const images = idxPayload(imagesFile), labels = idxPayload(labelsFile);
  const model = await lithe.load(baseBytes);
  const { heldout } = split(labels.length);
  const known = heldout.filter((k) => labels[k] < OLD);
  fine.base = evaluate(lithe, model, images, labels, known);
  model.dispose();
  $('status').textContent = `lithe ${info.version} (${info.build}); base CNN ${baseBytes.length} bytes, ` +
    `held-out accuracy on its ${OLD} classes ${(100 * fine.base.acc).toFixed(1)}%; new: ${NAMES.slice(OLD).join(', ')}`;
  fine.ready = true;
  $('train').disabled = false;

  $('train').addEventListener('click', async () => {
    const mode = document.querySelector('input[name="mode"]:checked').value;
    const steps = Math.max(1, Math.min(2000, Number($('steps').value) || 300));
    $('train').disabled = true;
    fine.busy = true;
    const run = (fine.runs[mode] = { steps, losses: [], memory: null, result: null, done: false });
    try {
      const worker = new Worker(new URL('finetune-worker.js', import.meta.url), { type: 'module' });
      const done = await new Promise((resolve, reject) => {
        worker.onerror = (e) => reject(new Error(e.message || 'the fine-tuning worker failed'));
        worker.onmessage = ({ data }) => {
          if (data.type === 'error') return reject(new Error(data.message));
          if (data.type === 'done') return resolve(data);
          run.losses.push(data.loss);
          run.memory = data.memory;
          const { plan, measured } = data.memory;
          if (data.step % 5 === 4 || data.step === steps - 1 || data.step === 0) {
            $('progress').value = (data.step + 1) / steps;
            $('progress-text').textContent = `${mode}: step ${data.step + 1}/${steps}, loss ${data.loss.toFixed(4)}, ${data.seconds.toFixed(1)} s`;
            row('memory', mode, [MiB(plan.total), MiB(measured.peak), MiB(measured.wasm)]);
            $('plan').textContent = `${mode}: the plan of a step — params ${KiB(plan.params)}, gradients ${KiB(plan.grads)}, ` +
              `Adam's state ${KiB(plan.optState)}, activations ${KiB(plan.activations)}: ${MiB(plan.total)}`;
            plot();
          }
        };
        worker.postMessage({ base: baseBytes, images, labels, mode, steps, relaxed });
      });
      worker.terminate();
      const r = done.result;
      Object.assign(run, { result: r, seconds: done.seconds, adapters: done.adapters?.length ?? 0, merged: done.merged.length, done: true });
      row('results', mode, [r.acc, r.oldAcc, r.newAcc].map((v) => `${(100 * v).toFixed(1)}%`).concat(done.seconds.toFixed(1)));
      if (done.adapters) offer($('download-adapters'), done.adapters, 'fashion-cnn10-lora.lithe');
      offer($('download-model'), done.merged, `fashion-cnn10-${mode}.lithe`);
    } catch (e) {
      fine.error = String(e?.message ?? e);
      $('progress-text').textContent = `error: ${fine.error}`;
    } finally {
      fine.busy = false;
      $('train').disabled = false;
    }
  });
}

main().catch((e) => {
  fine.error = String(e?.message ?? e);
  $('status').textContent = `error: ${fine.error}`;
  console.error(e);
});
