// lithe on WebGPU beside the WebGPU peers, in Debian's Chromium on ONE adapter (playwright-core;
// --enable-unsafe-webgpu --use-webgpu-adapter=swiftshader by default): lithe's npm package with
// its WebGPU module, tfjs 4.22's webgpu backend (MLP training step; MLP and CNN predict) and
// onnxruntime-web's WebGPU execution provider (predict: MLP, CNN, mobilenet_v2, transformer).
// SwiftShader is Vulkan on the CPU: its times are not GPU speed, so the table gives ratios against
// the peers on the same adapter, with the dispatches and submits each takes per step (counted by
// wrapping GPUComputePassEncoder.dispatchWorkgroups, GPUQueue.submit and GPUBuffer.mapAsync in the
// page: the same counter for everyone). lithe predicts only the models whose primitives are in
// WGSL: the others print "lithe: unsupported (<primitive>)".
// Timing: performance.now around one step or predict including its read-back (the loss, the
// output), after warm-up runs (pipelines compiled); the median of >= 5 runs and >= 2 s (--quick: 1
// warm-up, 3 runs), at most --max-s seconds per row.
//   node webgpu.mjs --dir BUILD/bench --wasm lithe-webgpu.wasm [--quick] [--max-s S] [--out FILE.md]
//        [--chromium /usr/bin/chromium] [--adapter swiftshader|default]
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { emit, npyRead, pkgVersion } from './common.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const argv = process.argv.slice(2);
const take = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv.splice(i, 2)[1] : dflt;
};
const dir = path.resolve(take('--dir', path.join(root, 'build/bench')));
const wasm = path.resolve(take('--wasm', path.join(root, 'build/wasm-webgpu/bindings/js/lithe-webgpu.wasm')));
const out = path.resolve(take('--out', path.join(root, 'build/bench/webgpu.md')));
const chromiumPath = take('--chromium', '/usr/bin/chromium');
const adapter = take('--adapter', 'swiftshader');
const maxS = Number(take('--max-s', '20'));
const quick = argv.includes('--quick');
// playwright-core from bench/node_modules, else tests/webgpu's or examples/browser's (npm ci there)
function playwright() {
  for (const from of ['bench', 'tests/webgpu', 'examples/browser'].map((d) => path.join(root, d, 'package.json'))) {
    try {
      return createRequire(from)('playwright-core');
    } catch { /* next */ }
  }
  throw new Error('playwright-core not found: npm ci in tests/webgpu/ (or examples/browser/)');
}
const { chromium } = playwright();
const nm = path.join(here, '..', 'node_modules');

// the inputs, as raw little-endian bytes plus a shape
const inputs = {};
for (const [name, file] of [['mlp_b64', 'mlp_b64_x.npy'], ['cnn_b32', 'cnn_b32_x.npy'], ['mobilenet_v2_b1', 'mobilenet_v2_b1_x.npy'],
  ['transformer_b1', 'transformer_b1_x.npy'], ['train_x', 'train_x.npy'], ['train_y', 'train_y.npy']]) {
  const f = path.join(dir, file);
  if (!fs.existsSync(f)) continue;
  const a = npyRead(f);
  inputs[name] = { shape: a.shape, dtype: a.data.constructor.name, bytes: Buffer.from(a.data.buffer, a.data.byteOffset, a.data.byteLength) };
}

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm' };
function resolve(p) {
  const within = (base, rel) => {
    const f = path.resolve(base, `.${path.posix.normalize(`/${rel}`)}`);
    return f.startsWith(base + path.sep) ? f : null;
  };
  if (p === '/' || p === '/index.html') return path.join(here, '..', 'webgpu', 'index.html');
  if (p === '/page.mjs') return path.join(here, '..', 'webgpu', 'page.mjs');
  if (p === '/lithe/dist/lithe-webgpu.wasm') return wasm;
  if (p.startsWith('/lithe/')) return within(path.join(root, 'bindings/js'), p.slice(7));
  if (p.startsWith('/nm/')) return within(nm, p.slice(4));
  if (p.startsWith('/models/')) return within(dir, p.slice(8));
  return null;
}
const server = http.createServer((req, res) => {
  const p = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  if (p.startsWith('/input/')) {
    const a = inputs[p.slice(7)];
    if (!a) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'x-shape': a.shape.join(','), 'x-dtype': a.dtype });
    return void res.end(a.bytes);
  }
  const f = resolve(p);
  if (!f || !fs.existsSync(f) || !fs.statSync(f).isFile()) return void res.writeHead(404).end();
  res.writeHead(200, { 'content-type': TYPES[path.extname(f)] ?? 'application/octet-stream' });
  fs.createReadStream(f).pipe(res);
});
await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
const browser = await chromium.launch({
  executablePath: chromiumPath,
  args: ['--no-sandbox', '--no-first-run', '--disable-dev-shm-usage', '--disable-background-networking', '--enable-unsafe-webgpu',
    ...(adapter === 'default' ? [] : [`--use-webgpu-adapter=${adapter}`]), '--enable-features=Vulkan'],
});
let rows = [], info = null;
try {
  const page = await browser.newPage();
  page.on('console', (m) => console.error(`[page] ${m.text()}`));
  page.on('pageerror', (e) => console.error(`[page error] ${e}`));
  await page.goto(`http://127.0.0.1:${server.address().port}/?quick=${quick ? 1 : 0}&maxS=${maxS}&inputs=${Object.keys(inputs).join(',')}`);
  await page.waitForFunction(() => window.bench?.done, null, { timeout: 3_600_000, polling: 1000 });
  ({ rows, info } = await page.evaluate(() => window.bench));
  if (info.error) throw new Error(info.error);
} finally {
  await browser.close();
  server.close();
}

// the report: per workload, each implementation's median, ratios lithe / peer, dispatches and submits
const versions = { tfjs: pkgVersion('@tensorflow/tfjs-backend-webgpu'), ort: pkgVersion('onnxruntime-web') };
for (const r of rows) emit({ group: 'webgpu', adapter: info.adapter, ...r });
const L = [`## WebGPU, side by side on one adapter (${info.adapter})`, '',
  `Chromium ${info.chromium}, \`--use-webgpu-adapter=${adapter}\`${info.adapter.includes('swiftshader') ? ': **SwiftShader is Vulkan on the CPU — these times are not GPU speed**; what carries over to a GPU is the ratio of work per step (dispatches, submits, read-backs), not the milliseconds' : ''}. ` +
  `lithe (npm, lithe-webgpu.wasm${info.subgroups ? ', subgroup GEMM' : ''}), @tensorflow/tfjs-backend-webgpu ${versions.tfjs}, onnxruntime-web ${versions.ort} (WebGPU EP). ` +
  `Per step or prediction, read-back included; median of ${quick ? '3 (--quick: a smoke test, not a measurement)' : '>= 5 runs and >= 2 s'}. ` +
  'd/s/r: dispatches / submits / buffer read-backs per step, counted in the page for every implementation alike.', '',
  '| workload | lithe ms (d/s/r) | tfjs-webgpu ms (d/s/r) | ort-webgpu ms (d/s/r) | lithe / tfjs | lithe / ort |', '|---|---|---|---|---|---|'];
const fmt = (r) => (!r ? '—' : r.unsupported ? `unsupported (${r.unsupported})` : r.error ? `error: ${r.error.slice(0, 60)}` :
  `${r.median_ms.toFixed(1)} (${r.dispatches}/${r.submits}/${r.readbacks})`);
const ratio = (a, b) => (a?.median_ms && b?.median_ms ? (a.median_ms / b.median_ms).toFixed(2) : '—');
for (const wl of [...new Set(rows.map((r) => r.workload))]) {
  const get = (impl) => rows.find((r) => r.workload === wl && r.impl === impl);
  const [l, t, o] = ['lithe', 'tfjs', 'ort'].map(get);
  L.push(`| ${wl} | ${l?.unsupported ? `lithe: unsupported (${l.unsupported})` : fmt(l)} | ${fmt(t)} | ${fmt(o)} | ${ratio(l, t)} | ${ratio(l, o)} |`);
}
L.push('', 'Ratios below 1: lithe is faster. No real GPU was lent to this machine: only SwiftShader rows exist.', '');
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, L.join('\n'));
console.log(L.join('\n'));
