// The WebGPU conformance in Chromium (tests/webgpu/browser.test.mjs serves this page on
// http://127.0.0.1 and reads window.result): the conformance module's checks against the CPU
// (every primitive, the loss read back once, both GEMM variants, a Relu MLP's ten Adam steps), the
// step counts, and the npm API end to end (init({ device: 'webgpu' }), model.to('webgpu'),
// predictAsync, trainStepAsync against the CPU backend) on navigator.gpu.
import { moduleImports } from '/lithe/src/loader.js';
import { requestDevice, webgpuImports, Asyncify } from '/lithe/src/webgpu.js';

const log = (s) => { document.getElementById('log').textContent += `${s}\n`; };
const wasmBytes = new Uint8Array(await (await fetch('/wasm/lithe-webgpu-test.wasm')).arrayBuffer());

async function load(dev, info) {
  const module = new WebAssembly.Module(wasmBytes);
  const out = [];
  let instance = null;
  const asyncify = new Asyncify();
  const getMemory = () => instance.exports.memory;
  const base = moduleImports(module, getMemory, (fd, text) => out.push(text));
  const wg = webgpuImports(dev, getMemory, asyncify, info);
  instance = await WebAssembly.instantiate(module, { ...base, ...wg.imports });
  instance.exports._initialize?.();
  asyncify.attach(instance, instance.exports.malloc);
  return { instance, wg, out, call: (name, ...a) => asyncify.call(name, ...a) };
}

async function run() {
  const found = await requestDevice(navigator.gpu);
  const r = { adapter: !!found.device, reason: found.reason ?? null, checks: {}, errors: [] };
  if (!found.device) return r;
  r.info = { vendor: found.info?.vendor, architecture: found.info?.architecture, subgroupMinSize: found.info?.subgroupMinSize, subgroupMaxSize: found.info?.subgroupMaxSize };
  for (const name of ['wgt_primitives', 'wgt_once', 'wgt_gemm_variants', 'wgt_mlp']) {
    const m = await load(found.device, found.info);
    const t0 = performance.now();
    const fails = await m.call(name);
    r.checks[name] = { fails, ms: performance.now() - t0, out: m.out.join(''), errors: m.wg.errors, subgroups: m.instance.exports.wgt_subgroups(-1) };
    log(`${name}: ${fails} failures`);
  }
  // the C-level step counts (784-64-32-10 MLP, batch 32)
  {
    const m = await load(found.device, found.info);
    let st = await m.call('wgt_step_setup', 0);
    for (let i = 0; i < 2 && !st; i++) st = await m.call('wgt_step');
    const s0 = { ...m.wg.stats }, steps = 3, t0 = performance.now();
    for (let i = 0; i < steps && !st; i++) st = await m.call('wgt_step');
    const per = {};
    for (const k of Object.keys(s0)) per[k] = (m.wg.stats[k] - s0[k]) / steps;
    r.step = { status: st, per, ms: (performance.now() - t0) / steps, out: m.out.join('') };
  }
  // the npm API, as a page uses it
  const lithe = await import('/lithe/src/index.js');
  const info = await lithe.init({ device: 'webgpu', wasm: wasmBytes });
  r.npm = { device: info.device };
  const c = lithe.c();
  const lenPtr = c.malloc(4);
  const bp = c.exports.wgt_mlp_bytes(lenPtr);
  const bytes = c.u8().slice(bp, bp + c.readU32(lenPtr));
  c.lithe_buffer_free(bp);
  c.free(lenPtr);
  const onGpu = lithe.loadBytes(bytes), onCpu = lithe.loadBytes(bytes);
  await onGpu.to('webgpu');
  const x = new Float32Array(8 * 20).map((_, i) => Math.sin(i));
  let maxPred = 0, maxLoss = 0;
  const p0 = await onGpu.predictAsync(x, [8, 20]), c0 = onCpu.predict(x, [8, 20]);
  for (let i = 0; i < c0.data.length; i++) maxPred = Math.max(maxPred, Math.abs(p0.data[i] - c0.data[i]));
  const og = lithe.adam({ learnRate: 0.01 }), oc = lithe.adam({ learnRate: 0.01 });
  const y = Int32Array.from({ length: 8 }, (_, i) => i % 10);
  const s0 = lithe.device().stats;
  for (let step = 0; step < 10; step++) {
    const lg = await onGpu.trainStepAsync({ x: lithe.tensor(x, [8, 20]), y, optimizer: og });
    const lc = onCpu.trainStep({ x: lithe.tensor(x, [8, 20]), y, optimizer: oc });
    maxLoss = Math.max(maxLoss, Math.abs(lg - lc));
  }
  const s1 = lithe.device().stats;
  const p1 = await onGpu.predictAsync(x, [8, 20]), c1 = onCpu.predict(x, [8, 20]);
  let maxPred1 = 0;
  for (let i = 0; i < c1.data.length; i++) maxPred1 = Math.max(maxPred1, Math.abs(p1.data[i] - c1.data[i]));
  Object.assign(r.npm, { maxPred, maxLoss, maxPred1, per: Object.fromEntries(Object.keys(s1).map((k) => [k, (s1[k] - s0[k]) / 10])) });
  try {
    onGpu.predict(x, [8, 20]);
    r.npm.syncRefused = false;
  } catch (e) {
    r.npm.syncRefused = /asynchronously/.test(e.message);
  }
  return r;
}

window.result = await run().catch((e) => ({ crashed: String(e?.stack ?? e) }));
log(JSON.stringify(window.result, null, 1));
