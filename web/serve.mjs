#!/usr/bin/env node
// Serves the demo: `node web/serve.mjs` (from a lithe checkout), then open http://localhost:8080/.
// It serves web/ itself, the npm package (bindings/js) under /lithe/, Debian's Fashion-MNIST files
// under /data/, and the model under /model/fashion9.lithe. What is missing is made first: the
// package's .wasm files (npm run build: CMake + Emscripten) and the model, trained by the main job
// on the first nine classes (lithe train-mnist --classes 9), so that the page can teach the tenth.
// Options: --port N (0: any free port; the URL is printed), --model PATH, --epochs N, --cnn PATH
// (finetune.html's base, made by make-cnn.mjs when first asked for), --isolate
// (send COOP and COEP headers, so the page is cross-origin isolated and may use the package's
// threads build: open it with ?threads=N).
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const webDir = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(webDir, '..');
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const port = Number(opt('--port', process.env.PORT ?? 8080));
const modelPath = path.resolve(opt('--model', path.join(repo, 'build/web/fashion9.lithe')));
// finetune.html's base CNN (make-cnn.mjs trains it with the npm package when it is missing)
const cnnPath = path.resolve(opt('--cnn', path.join(repo, 'build/web/fashion-cnn8.lithe')));
const dataDir = '/usr/share/datasets/fashion-mnist';
const pkgDir = path.join(repo, 'bindings/js');

function run(cmd, argv, cwd) {
  console.log(`serve: $ ${cmd} ${argv.join(' ')}`);
  const r = spawnSync(cmd, argv, { cwd, stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
if (!['simd', 'simd-threads', 'relaxed-simd', 'scalar', 'importers', 'importers-simd', 'importers-relaxed-simd'].every((f) => fs.existsSync(path.join(pkgDir, `dist/lithe-${f}.wasm`)))) run('npm', ['run', 'build'], pkgDir);
const isolate = args.includes('--isolate');
if (!fs.existsSync(modelPath)) {
  let lithe = ['build/ci', 'build/default'].map((b) => path.join(repo, b, 'tools/lithe/lithe')).find(fs.existsSync);
  if (!lithe) {
    run('cmake', ['--preset', 'default'], repo);
    run('cmake', ['--build', '--preset', 'default', '--target', 'lithe_cli'], repo);
    lithe = path.join(repo, 'build/default/tools/lithe/lithe');
  }
  fs.mkdirSync(path.dirname(modelPath), { recursive: true });
  run(lithe, ['train-mnist', '--classes', '9', '--epochs', opt('--epochs', '3'), '--save', modelPath], repo);
}

// made on the first request for it (a minute or two), so that index.html's users never wait for it
let cnnMaking = null;
const makeCnn = () => (cnnMaking ??= new Promise((resolve, reject) => {
  console.log(`serve: $ node web/make-cnn.mjs --out ${cnnPath}`);
  spawn(process.execPath, [path.join(webDir, 'make-cnn.mjs'), '--out', cnnPath], { cwd: repo, stdio: 'inherit' })
    .once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`make-cnn.mjs exited with ${code}`))));
}));

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript', '.css': 'text/css',
  '.wasm': 'application/wasm', '.json': 'application/json', '.gz': 'application/octet-stream', '.lithe': 'application/octet-stream',
  '.ts': 'text/plain' };

// URL path -> file, never outside the directories served.
function resolve(urlPath) {
  const p = decodeURIComponent(urlPath.split('?')[0]);
  const within = (base, rel) => {
    const f = path.resolve(base, `.${path.posix.normalize(`/${rel}`)}`);
    return f.startsWith(base + path.sep) || f === base ? f : null;
  };
  if (p === '/model/fashion9.lithe') return modelPath;
  if (p === '/model/fashion-cnn8.lithe') return cnnPath;
  if (p.startsWith('/lithe/')) return within(pkgDir, p.slice('/lithe/'.length));
  if (p.startsWith('/data/')) return within(dataDir, p.slice('/data/'.length));
  return within(webDir, p === '/' ? 'index.html' : p.slice(1));
}

const server = http.createServer(async (req, res) => {
  const file = resolve(req.url);
  if (file === cnnPath && !fs.existsSync(file)) await makeCnn().catch((e) => console.error(`serve: ${e.message}`));
  if (!file || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found\n');
    return;
  }
  const headers = { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-store' };
  // cross-origin isolation: the page, its workers and everything they load come from here
  if (isolate) Object.assign(headers, { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' });
  res.writeHead(200, headers);
  fs.createReadStream(file).pipe(res);
});
server.listen(port, '127.0.0.1', () => {
  console.log(`serve: the lithe demo at http://127.0.0.1:${server.address().port}/ (model ${modelPath})` +
    (isolate ? '; cross-origin isolated (COOP + COEP): try ?threads=2' : ''));
});
