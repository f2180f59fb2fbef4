// The fine-tuning, in a module Web Worker so the page stays responsive: its own lithe instance
// gets the model as .lithe bytes, adds the new output, trains, reports each step, and sends the
// fine-tuned model back as bytes. (Import maps do not reach workers: the package by its path.)
import * as lithe from '/lithe/src/index.js';

const D = 784;

// A small seeded generator, so that a run of the page repeats.
function rng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Image k of `pixels` (uint8, n x 784) shifted by (dx, dy), scaled to [0, 1], into out at off:
// cheap augmentation for a handful of picked examples.
function shifted(pixels, k, dx, dy, out, off) {
  const p = pixels.subarray(k * D, (k + 1) * D);
  for (let y = 0; y < 28; y++)
    for (let x = 0; x < 28; x++) {
      const sx = x - dx, sy = y - dy;
      out[off + y * 28 + x] = sx >= 0 && sx < 28 && sy >= 0 && sy < 28 ? p[sy * 28 + sx] / 255 : 0;
    }
}

self.onmessage = async ({ data }) => {
  try {
    // data: model (bytes), nOld, steps, picked (uint8 images), replay (uint8 images), replayLabels,
    // threads (the page's ?threads=, if any), relaxed (false: the page's ?relaxed=0), device ('webgpu':
    // the page's "train on the GPU" switch)
    // device 'webgpu' (the page's "train on the GPU"): the WebGPU module, or the CPU with a reason
    const wantGpu = data.device === 'webgpu';
    const info = await lithe.init(wantGpu ? { device: 'webgpu' }
      : { ...(data.threads ? { threads: data.threads } : {}), ...(data.relaxed === false ? { relaxed: false } : {}) });
    const gpu = info.device === 'webgpu';
    if (wantGpu) {
      const a = lithe.device().info;
      self.postMessage({ type: 'device', device: info.device, reason: info.deviceReason, adapter: a ? `${a.vendor || '?'} ${a.architecture || ''}`.trim() : null });
    }
    const model = lithe.loadBytes(data.model);
    model.resizeOutput(data.nOld + 1);
    model.setSeed(0);
    if (gpu) await model.to('webgpu');
    const optimizer = lithe.adam({ learnRate: 0.001 });
    const nPicked = data.picked.length / D, nReplay = data.replay.length / D;
    const rand = rng(1);
    const B = 32, nNew = 8; // a quarter new examples, the rest replayed so the old are kept
    const x = new Float32Array(B * D), y = new Int32Array(B);
    const t0 = performance.now();
    for (let step = 0; step < data.steps; step++) {
      for (let r = 0; r < B; r++) {
        if (r < nNew) {
          shifted(data.picked, Math.floor(rand() * nPicked), Math.floor(rand() * 5) - 2, Math.floor(rand() * 5) - 2, x, r * D);
          y[r] = data.nOld; // the new output
        } else {
          const k = Math.floor(rand() * nReplay);
          shifted(data.replay, k, 0, 0, x, r * D);
          y[r] = data.replayLabels[k];
        }
      }
      const step0 = { ...lithe.device().stats }, ts = performance.now();
      const loss = gpu ? await model.trainStepAsync({ x: lithe.tensor(x, [B, D]), y: lithe.tensor(y, [B]), optimizer })
        : model.trainStep({ x: lithe.tensor(x, [B, D]), y: lithe.tensor(y, [B]), optimizer });
      let gpuStep = null;
      if (gpu) {
        const s1 = lithe.device().stats;
        gpuStep = { dispatches: s1.dispatches - step0.dispatches, submits: s1.submits - step0.submits,
          readbacks: s1.readbacks - step0.readbacks, ms: performance.now() - ts };
      }
      self.postMessage({ type: 'step', step, loss, seconds: (performance.now() - t0) / 1000, batch: B, gpu: gpuStep });
    }
    if (gpu) await model.to('cpu'); // the weights come back for saving
    const bytes = model.save();
    model.dispose();
    optimizer.dispose();
    self.postMessage({ type: 'done', bytes, simd: info.simd, build: info.build, threads: info.threads, device: info.device,
      seconds: (performance.now() - t0) / 1000 }, [bytes.buffer]);
  } catch (e) {
    self.postMessage({ type: 'error', message: String(e?.message ?? e) });
  }
};
