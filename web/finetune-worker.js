// finetune.html's fine-tuning, in a module Web Worker with its own lithe instance: it gets the
// base as .lithe bytes and the test images, runs web/finetune-core.js's recipe (the one
// finetune-accuracy.mjs measures in Node), reports each step's loss and memory, evaluates on the
// held-out images, and sends back the adapters (LoRA) and the model with them merged, as bytes.
import * as lithe from '/lithe/src/index.js';
import { fineTune, evaluate, split } from './finetune-core.js';

self.onmessage = async ({ data }) => {
  try {
    // data: base (bytes), images (uint8, 10000 x 784), labels (uint8), mode, steps, relaxed
    const info = await lithe.init(data.relaxed === false ? { relaxed: false } : {});
    await lithe.load(data.base).then((m) => m.dispose()); // links the importer module (the CNN is a graph)
    const { pool, heldout } = split(data.labels.length);
    const t0 = performance.now();
    const model = fineTune(lithe, data.base, data.images, data.labels, pool, {
      mode: data.mode, steps: data.steps,
      onStep: (step, loss, memory) => self.postMessage({ type: 'step', step, loss, memory, seconds: (performance.now() - t0) / 1000 }),
    });
    const seconds = (performance.now() - t0) / 1000;
    const result = evaluate(lithe, model, data.images, data.labels, heldout);
    const adapters = data.mode === 'lora' ? model.saveLora() : null;
    if (adapters) model.mergeLora();
    const merged = model.save();
    model.dispose();
    self.postMessage({ type: 'done', result, seconds, adapters, merged, build: info.build },
      [merged.buffer, ...(adapters ? [adapters.buffer] : [])]);
  } catch (e) {
    self.postMessage({ type: 'error', message: String(e?.message ?? e) });
  }
};
