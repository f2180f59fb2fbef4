// lithe's npm package in Debian's Chromium (headless, playwright-core): its SIMD128 core, its
// relaxed-SIMD core (f32x4.relaxed_madd in the GEMM; Node 20's V8 has no relaxed SIMD, so only a
// browser can measure it) and, with --threads N, its threads module with N - 1 Web Workers (the page
// is cross-origin isolated: COOP + COEP). Inference on the suite's ONNX files, the timing protocol
// of bench/README.md inside the page (performance.now around model.predict(x).data, the copies in
// and out included). Each variant runs in a fresh page (one module instance each); with --rounds R
// the variants run R times in a rotating order, one RESULT per variant and workload per round.
// With --ort DIR (onnxruntime-web's dist/), its peer in the same browser: onnxruntime-web's wasm EP
// with numThreads=1 ("ort") and, with --threads N, numThreads=N ("ort-threads", its own workers).
// --variants picks some of simd, relaxed, threads, ort, ort-threads (default: all that were given);
// bench/run.py --browser runs one variant per job, so that its rounds interleave them with the rest.
//   node lithe_browser.mjs --dir BUILD/bench --simd lithe-simd.wasm --importers lithe-importers-simd.wasm
//        [--relaxed lithe-relaxed-simd.wasm --relaxed-importers lithe-importers-relaxed-simd.wasm] [--threads-wasm lithe-simd-threads.wasm --threads N]
//        [--ort node_modules/onnxruntime-web/dist] [--variants simd,relaxed,threads,ort,ort-threads]
//        [--rounds R] [--workloads a,b] [--quick] [--max-s S] [--chromium /usr/bin/chromium]
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { emit, WORKLOADS } from './common.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const argv = process.argv.slice(2);
const take = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv.splice(i, 2)[1] : dflt;
};
const simd = take('--simd'), relaxed = take('--relaxed'), importers = take('--importers');
const relaxedImporters = take('--relaxed-importers', importers); // (lithe-importers-relaxed-simd.wasm)
const threadsWasm = take('--threads-wasm'), threads = Number(take('--threads', '1'));
const rounds = Number(take('--rounds', '1')), chromiumPath = take('--chromium', '/usr/bin/chromium');
const dir = take('--dir'), maxS = Number(take('--max-s', '20')), ortDir = take('--ort');
const only = take('--variants')?.split(',');
const workloads = (take('--workloads') ?? 'mlp_b1,mlp_b64,cnn_b1,cnn_b32,mobilenet_v2_b1,transformer_b1').split(',');
const quick = argv.includes('--quick');

// playwright-core from bench/node_modules, else the browser example's (examples/browser: npm ci)
function playwright() {
  for (const from of [path.join(here, '..', 'package.json'), path.join(root, 'examples/browser/package.json')]) {
    try {
      return createRequire(from)('playwright-core');
    } catch { /* next */ }
  }
  throw new Error('playwright-core not found: npm ci in bench/ (or examples/browser/)');
}

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm' };
const files = { '/simd.wasm': simd, '/relaxed.wasm': relaxed, '/importers.wasm': importers, '/relaxed-importers.wasm': relaxedImporters,
  '/threads.wasm': threadsWasm };
function serve() {
  const srv = http.createServer((req, res) => {
    const p = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    let file = files[p];
    if (p === '/favicon.ico') return void res.writeHead(204).end(); // (what Chromium asks for first)
    if (p === '/') file = 'index.html';
    else if (p.startsWith('/pkg/src/')) file = path.join(root, 'bindings/js/src', path.basename(p));
    else if (p.startsWith('/data/')) file = path.join(dir, path.basename(p));
    else if (p.startsWith('/ort/') && ortDir) file = path.join(ortDir, path.basename(p));
    const headers = { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' };
    if (file === 'index.html') return void res.writeHead(200, { ...headers, 'content-type': 'text/html' }).end('<!doctype html><title>lithe bench</title>');
    if (!file || !fs.existsSync(file)) return void res.writeHead(404, headers).end();
    res.writeHead(200, { ...headers, 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve(srv)));
}

// runs in the page: init the variant, then each workload: load, time predict, check against torch
async function inPage({ variant, workloads, quick, maxS }) {
  const lithe = await import('/pkg/src/index.js');
  const opts = variant === 'threads' ? { wasm: '/threads.wasm', threads: variant === 'threads' ? window.__threads : 1 }
    : { wasm: variant === 'relaxed' ? '/relaxed.wasm' : '/simd.wasm', threads: 1,
        importers: variant === 'relaxed' ? '/relaxed-importers.wasm' : '/importers.wasm' };
  const info = await lithe.init(opts);
  const npy = async (name) => {
    const b = new Uint8Array(await (await fetch(`/data/${name}`)).arrayBuffer());
    const hlen = b[6] === 1 ? b[8] | (b[9] << 8) : new DataView(b.buffer).getUint32(8, true);
    const off = b[6] === 1 ? 10 : 12;
    const header = new TextDecoder().decode(b.subarray(off, off + hlen));
    const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim()).filter(Boolean).map(Number);
    return { data: new Float32Array(b.slice(off + hlen).buffer), shape };
  };
  const out = [];
  for (const [wl, model] of workloads) {
    try {
      const m = await lithe.load(`/data/${model}.onnx`);
      const x = await npy(`${wl}_x.npy`), ref = await npy(`${wl}_ref.npy`);
      const xt = lithe.tensor(x.data, x.shape);
      let y;
      const fn = () => { y = m.predict(xt).data; };
      const warmS = quick ? 0 : 1.0, minS = quick ? 0 : 1.5, warmRuns = quick ? 1 : 5, minRuns = quick ? 3 : 30;
      let w = 0;
      const t0 = performance.now();
      while ((w < warmRuns || performance.now() - t0 < warmS * 1000) && !(w >= 1 && performance.now() - t0 >= maxS * 1000)) { fn(); w++; }
      const t = [];
      const start = performance.now();
      while (t.length < 2000 && (t.length < minRuns || performance.now() - start < minS * 1000) &&
             !(t.length >= 5 && performance.now() - start >= maxS * 1000)) {
        const a = performance.now();
        fn();
        t.push(performance.now() - a);
      }
      t.sort((p, q) => p - q);
      const n = t.length;
      let err = 0, refMax = 0;
      for (let i = 0; i < ref.data.length; i++) {
        err = Math.max(err, Math.abs(y[i] - ref.data[i]));
        refMax = Math.max(refMax, Math.abs(ref.data[i]));
      }
      out.push({ wl, median_ms: n % 2 ? t[(n - 1) / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]), min_ms: t[0], max_ms: t[n - 1],
                 mean_ms: t.reduce((p, q) => p + q, 0) / n, runs: n, warmup_runs: w, err, ref_max: refMax });
      m.dispose();
    } catch (e) {
      out.push({ wl, error: String(e.message ?? e).split('\n')[0] });
    }
  }
  return { info, out, ua: navigator.userAgent, relaxedValid: lithe.relaxedSimdSupported() };
}

// runs in the page: onnxruntime-web's wasm EP (its SIMD threaded module, numThreads workers), one
// session per model, the same protocol (performance.now around session.run + getData)
async function inPageOrt({ workloads, quick, maxS, numThreads }) {
  const ort = await import('/ort/ort.wasm.min.mjs');
  ort.env.wasm.numThreads = numThreads;
  ort.env.wasm.simd = true;
  ort.env.wasm.wasmPaths = '/ort/';
  const npy = async (name) => {
    const b = new Uint8Array(await (await fetch(`/data/${name}`)).arrayBuffer());
    const hlen = b[6] === 1 ? b[8] | (b[9] << 8) : new DataView(b.buffer).getUint32(8, true);
    const off = b[6] === 1 ? 10 : 12;
    const header = new TextDecoder().decode(b.subarray(off, off + hlen));
    const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim()).filter(Boolean).map(Number);
    return { data: new Float32Array(b.slice(off + hlen).buffer), shape };
  };
  const out = [];
  for (const [wl, model] of workloads) {
    try {
      const sess = await ort.InferenceSession.create(`/data/${model}.onnx`, {
        executionProviders: ['wasm'], intraOpNumThreads: numThreads, interOpNumThreads: 1,
        executionMode: 'sequential', graphOptimizationLevel: 'all' });
      const x = await npy(`${wl}_x.npy`), ref = await npy(`${wl}_ref.npy`);
      const feeds = { [sess.inputNames[0]]: new ort.Tensor('float32', x.data, x.shape) };
      let y;
      const fn = async () => { const r = await sess.run(feeds); y = await r[sess.outputNames[0]].getData(); };
      const warmS = quick ? 0 : 1.0, minS = quick ? 0 : 1.5, warmRuns = quick ? 1 : 5, minRuns = quick ? 3 : 30;
      let w = 0;
      const t0 = performance.now();
      while ((w < warmRuns || performance.now() - t0 < warmS * 1000) && !(w >= 1 && performance.now() - t0 >= maxS * 1000)) { await fn(); w++; }
      const t = [];
      const start = performance.now();
      while (t.length < 2000 && (t.length < minRuns || performance.now() - start < minS * 1000) &&
             !(t.length >= 5 && performance.now() - start >= maxS * 1000)) {
        const a = performance.now();
        await fn();
        t.push(performance.now() - a);
      }
      t.sort((p, q) => p - q);
      const n = t.length;
      let err = 0, refMax = 0;
      for (let i = 0; i < ref.data.length; i++) {
        err = Math.max(err, Math.abs(y[i] - ref.data[i]));
        refMax = Math.max(refMax, Math.abs(ref.data[i]));
      }
      out.push({ wl, median_ms: n % 2 ? t[(n - 1) / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]), min_ms: t[0], max_ms: t[n - 1],
                 mean_ms: t.reduce((p, q) => p + q, 0) / n, runs: n, warmup_runs: w, err, ref_max: refMax });
      await sess.release();
    } catch (e) {
      out.push({ wl, error: String(e.message ?? e).split('\n')[0] });
    }
  }
  return { out, ua: navigator.userAgent, version: ort.env.versions?.web ?? '?', isolated: self.crossOriginIsolated };
}

const server = await serve();
const origin = `http://127.0.0.1:${server.address().port}`;
const { chromium } = playwright();
// (playwright gives each launch a fresh --user-data-dir of its own)
const browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox', '--disable-gpu', '--no-first-run'] });
const variants = ['simd', ...(relaxed ? ['relaxed'] : []), ...(threadsWasm && threads > 1 ? ['threads'] : []),
  ...(ortDir ? ['ort', ...(threads > 1 ? ['ort-threads'] : [])] : [])].filter((v) => !only || only.includes(v));
if (only && only.some((v) => !variants.includes(v))) {
  console.error(`--variants ${only.join(',')}: not all of them were given their files (have ${variants.join(',') || 'none'})`);
  process.exit(2);
}
const wls = workloads.map((wl) => [wl, WORKLOADS[wl]]);
let failed = false;
try {
  for (let r = 0; r < rounds; r++) {
    for (let v = 0; v < variants.length; v++) {
      const variant = variants[(v + r) % variants.length];
      const page = await browser.newPage();
      page.on('console', (m) => { if (m.type() === 'error') console.error(`[page] ${m.text()}`); });
      await page.goto(`${origin}/`);
      await page.evaluate((n) => { window.__threads = n; }, threads);
      if (variant.startsWith('ort')) {
        const numThreads = variant === 'ort' ? 1 : threads;
        const res = await page.evaluate(inPageOrt, { workloads: wls, quick, maxS, numThreads });
        const ver = /Chrome\/([\d.]+)/.exec(res.ua)?.[1] ?? '?';
        for (const o of res.out) {
          if (o.error) failed = true;
          emit({ group: 'infer', workload: o.wl, runner: `onnxruntime-web ${res.version} (Chromium ${ver.split('.')[0]})`,
                 impl: 'wasm', threads: numThreads, config: `wasm EP, SIMD, numThreads=${numThreads}${res.isolated ? '' : ' (not isolated)'}`,
                 round: r + 1, ...o, wl: undefined, ref: 'torch output, same ONNX file' });
        }
        await page.close();
        continue;
      }
      const res = await page.evaluate(inPage, { variant, workloads: wls, quick, maxS });
      const ver = /Chrome\/([\d.]+)/.exec(res.ua)?.[1] ?? '?';
      const how = { simd: 'SIMD128', relaxed: 'relaxed SIMD', threads: 'SIMD128 threads' }[variant];
      for (const o of res.out) {
        if (o.error) failed = true;
        emit({ group: 'infer', workload: o.wl, runner: `lithe ${res.info.version} (npm, ${how} wasm, Chromium ${ver.split('.')[0]})`,
               impl: 'wasm', threads: res.info.threads, config: 'graph layer (.onnx)', round: r + 1,
               ...(variant === 'relaxed' ? { relaxed_valid: res.relaxedValid } : {}), ...o, wl: undefined,
               ref: 'torch output, same ONNX file' });
      }
      await page.close();
    }
  }
} finally {
  await browser.close();
  server.close();
}
process.exit(failed ? 1 : 0);
