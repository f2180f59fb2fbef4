// Loading the WebAssembly module: picks the SIMD128 build when the engine validates a SIMD
// instruction (WebAssembly has no run-time CPU dispatch), else the scalar one, and instantiates it
// with the few imports the standalone module has (stdout/stderr writes for messages; everything
// else answers "not supported"). Same code in Node, browsers and Web Workers.
//
// With more than one thread asked for (options.threads; the default is ONNX Runtime Web's,
// min(4, ceil(cores / 2))) and where shared memory is allowed (Node; a browser page or worker that
// is cross-origin isolated), it loads the threads module instead (lithe-simd-threads.wasm: SIMD128
// with atomics over a shared memory) and starts threads - 1 workers (Web Workers, worker_threads
// in Node; src/thread.js) that instantiate the same module on the same memory and wait in the
// CPU backend's thread pool. Elsewhere it falls back silently to one thread.

// (module (func (result v128) i32.const 0 i8x16.splat)): valid only where SIMD128 is supported.
const SIMD_PROBE = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 8, 1, 6, 0, 65, 0,
  253, 15, 11]);

export function simdSupported() {
  try {
    return WebAssembly.validate(SIMD_PROBE);
  } catch {
    return false;
  }
}

const isNode = typeof process !== 'undefined' && !!process.versions?.node && typeof window === 'undefined';
// Node's own modules, only ever loaded in Node. The specifier is computed so that bundlers
// building for browsers (esbuild, Vite, webpack) leave it alone instead of failing to resolve it.
const nodeModule = (name) => import(/* webpackIgnore: true */ /* @vite-ignore */ `node:${name}`);

// Whether this context may run the threads module: shared WebAssembly memory (a browser allows it
// only in a cross-origin isolated context: COOP + COEP headers), workers, and SIMD128.
export function threadsSupported() {
  if (!isNode && (globalThis.crossOriginIsolated !== true || typeof Worker !== 'function')) return false;
  try {
    return simdSupported() && new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true }).buffer instanceof SharedArrayBuffer;
  } catch {
    return false;
  }
}

// The default thread count: min(4, ceil(cores / 2)), as ONNX Runtime Web (the other half is left
// to the page and the rest of the machine).
async function defaultThreads() {
  let cores = 1;
  if (isNode) {
    const os = await nodeModule('os');
    cores = os.availableParallelism?.() ?? os.cpus().length;
  } else {
    cores = globalThis.navigator?.hardwareConcurrency ?? 1;
  }
  return Math.max(1, Math.min(4, Math.ceil(cores / 2)));
}

// The module's URL next to this file (bundlers understand `new URL(literal, import.meta.url)` and
// copy the asset); each literal appears so each file is emitted.
function defaultUrl(build) {
  if (build === 'simd-threads') return new URL('../dist/lithe-simd-threads.wasm', import.meta.url);
  return build === 'simd' ? new URL('../dist/lithe-simd.wasm', import.meta.url) : new URL('../dist/lithe-scalar.wasm', import.meta.url);
}

export async function readBytes(source) {
  if (source instanceof Uint8Array || source instanceof ArrayBuffer) return source;
  if (isNode && typeof source === 'string' && !/^[a-z][a-z0-9+.-]+:/i.test(source)) {
    // a file path (not a URL): read as is, whatever characters it holds
    const fs = await nodeModule('fs/promises');
    return fs.readFile(source);
  }
  const url = source instanceof URL ? source : new URL(String(source), globalThis.location?.href);
  if (isNode && url.protocol === 'file:') {
    const fs = await nodeModule('fs/promises');
    const { fileURLToPath } = await nodeModule('url');
    return fs.readFile(fileURLToPath(url));
  }
  const res = await fetch(url);
  if (!res.ok) throw new Error(`lithe: cannot fetch ${url}: HTTP ${res.status}`);
  return new Uint8Array(await res.arrayBuffer());
}

// Compiles the module, streaming from the network in browsers (compiling while it downloads)
// when the server sends application/wasm, else from the bytes.
async function compile(source) {
  const remote = !isNode && !(source instanceof Uint8Array || source instanceof ArrayBuffer);
  if (remote && typeof WebAssembly.compileStreaming === 'function') {
    const url = source instanceof URL ? source : new URL(String(source), globalThis.location?.href);
    const res = await fetch(url);
    if (!res.ok) throw new Error(`lithe: cannot fetch ${url}: HTTP ${res.status}`);
    if ((res.headers.get('content-type') ?? '').startsWith('application/wasm')) return WebAssembly.compileStreaming(res);
    return WebAssembly.compile(await res.arrayBuffer());
  }
  return WebAssembly.compile(await readBytes(source));
}

const EBADF = 8, ENOSYS = 52;

// The threads module's memory, created here and shared with the workers: its limits must match
// the module's import (bindings/js/CMakeLists.txt: 16 MiB initial, 4 GiB maximum).
const THREADS_MEMORY = { initial: 256, maximum: 65536, shared: true };
// Each worker's stack (C's shadow stack), allocated in the shared memory by the main instance.
const WORKER_STACK = 512 * 1024;

// The imports of the standalone module: `print(fd, text)` receives what C writes to stdout (1) /
// stderr (2); getMemory() is the instance's memory (known once instantiated, or imported).
export function moduleImports(module, getMemory, print, memory) {
  const decoder = new TextDecoder();
  const pending = { 1: '', 2: '' };
  const out = print ?? ((fd, text) => (fd === 2 ? console.warn : console.log)(text));
  const wasi = {
    fd_write(fd, iovs, iovsLen, nwrittenPtr) {
      const mem = getMemory();
      const dv = new DataView(mem.buffer);
      let n = 0;
      for (let i = 0; i < iovsLen; i++) {
        const ptr = dv.getUint32(iovs + 8 * i, true), len = dv.getUint32(iovs + 8 * i + 4, true);
        // a copy: TextDecoder refuses views of shared memory
        if (fd === 1 || fd === 2) pending[fd] += decoder.decode(new Uint8Array(mem.buffer).slice(ptr, ptr + len));
        n += len;
      }
      if (fd === 1 || fd === 2) {
        const lines = pending[fd].split('\n');
        pending[fd] = lines.pop();
        for (const line of lines) out(fd, line);
      }
      dv.setUint32(nwrittenPtr, n, true);
      return fd === 1 || fd === 2 ? 0 : EBADF;
    },
    fd_read: () => EBADF,
    fd_seek: () => EBADF,
    fd_close: () => EBADF,
    fd_sync: () => EBADF,
  };
  const env = { emscripten_notify_memory_growth() {} };
  if (memory) env.memory = memory;
  // Whatever else the module imports (file syscalls: there is no file system here) fails softly:
  // lithe turns it into LITHE_ERR_IO, never a trap.
  const imports = { wasi_snapshot_preview1: { ...wasi }, env: { ...env } };
  for (const imp of WebAssembly.Module.imports(module)) {
    if (imp.kind !== 'function') continue;
    const ns = (imports[imp.module] ??= {});
    if (!(imp.name in ns)) ns[imp.name] = imp.module === 'env' ? () => -ENOSYS : () => ENOSYS;
  }
  return imports;
}

// Starts n workers on the threads module (src/thread.js), each with its own stack in the shared
// memory, and resolves with how many are waiting in the thread pool (0 if workers cannot be made
// here: a Content-Security-Policy without worker-src, say; the module then runs on one thread).
async function startWorkers(module, memory, exports, n, threadUrl) {
  if (n <= 0) return 0;
  const NodeWorker = isNode ? (await nodeModule('worker_threads')).Worker : null;
  const makeWorker = (slot) => {
    if (NodeWorker) return new NodeWorker(threadUrl ?? new URL('./thread.js', import.meta.url));
    const options = { type: 'module', name: `lithe thread ${slot + 1}` };
    // the literal form, which bundlers that handle workers (webpack 5, Vite) recognise
    return threadUrl ? new Worker(threadUrl, options) : new Worker(new URL('./thread.js', import.meta.url), options);
  };
  const workers = [];
  const started = [];
  try {
    for (let slot = 0; slot < n; slot++) {
      const stack = exports.malloc(WORKER_STACK);
      if (!stack) break;
      const stackTop = (stack + WORKER_STACK) & ~15;
      const w = makeWorker(slot);
      workers.push(w);
      started.push(new Promise((resolve, reject) => {
        const onMessage = (m) => {
          const data = isNode ? m : m.data;
          if (data?.error) reject(new Error(`lithe: a worker thread failed to start: ${data.error}`));
          else resolve();
        };
        const onError = (e) => reject(e instanceof Error ? e : new Error(`lithe: a worker thread failed to start: ${e.message}`));
        if (isNode) {
          w.once('message', onMessage);
          w.once('error', onError);
        } else {
          w.addEventListener('message', onMessage, { once: true });
          w.addEventListener('error', onError, { once: true });
        }
      }));
      w.postMessage({ module, memory, slot, stackTop });
    }
    await Promise.all(started);
  } catch {
    for (const w of workers) w.terminate();
    return 0;
  }
  // Node: the workers wait in the pool for good; they must not keep the process alive.
  if (isNode) for (const w of workers) w.unref();
  return workers.length;
}

// Instantiates the module. options: wasm (bytes, URL, path or WebAssembly.Module: a module of
// one's own; a threads module is recognised by its imported memory), simd (force or refuse the
// SIMD128 builds), threads (threads in all, >= 1), threadUrl (where src/thread.js is served, when a
// bundler moved it), print(fd, text) for C's stdout/stderr.
export async function instantiate({ wasm, simd, print, threads, threadUrl } = {}) {
  const useSimd = simd ?? simdSupported();
  const want = Math.max(1, Math.min(65, Math.floor(threads ?? (await defaultThreads()))));
  let build = useSimd ? 'simd' : 'scalar';
  let module;
  if (wasm instanceof WebAssembly.Module) module = wasm;
  else if (wasm !== undefined) module = await compile(wasm);
  else if (want > 1 && useSimd && threadsSupported()) {
    try {
      module = await compile(defaultUrl('simd-threads'));
      build = 'simd-threads';
    } catch {
      module = undefined; // the plain SIMD module will do
    }
  }
  module ??= await compile(defaultUrl(build));
  let shared = WebAssembly.Module.imports(module).some((imp) => imp.kind === 'memory');
  let memory = null;
  if (shared) {
    try {
      memory = new WebAssembly.Memory(THREADS_MEMORY);
      build = 'simd-threads';
    } catch (e) {
      // no room to reserve a shared 4 GiB memory (a 32-bit or small device): one thread instead
      if (wasm !== undefined) throw e;
      module = await compile(defaultUrl('simd'));
      shared = false;
      build = 'simd';
    }
  }
  const imports = moduleImports(module, () => memory, print, memory);
  const instance = await WebAssembly.instantiate(module, imports);
  memory = instance.exports.memory ?? memory;
  instance.exports._initialize?.();
  let nthreads = 1;
  if (shared) {
    const workers = await startWorkers(module, memory, instance.exports, want - 1, threadUrl);
    // a browser's main thread may not block in memory.atomic.wait: it spins while it waits
    const canBlock = isNode || typeof document === 'undefined';
    const st = instance.exports.lithe_js_threads_ready(workers, canBlock ? 1 : 0);
    if (st !== 0) throw new Error(`lithe: the threads module refused ${workers} workers (status ${st})`);
    nthreads = workers + 1;
  }
  return { instance, exports: instance.exports, memory, simd: useSimd || shared, module, threads: nthreads, build };
}
