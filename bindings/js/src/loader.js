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

import { litheError, STATUS } from './raw.js';

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

// (module (func (result v128) i32.const 0 i8x16.splat (twice more) f32x4.relaxed_madd)): valid only
// where the engine has relaxed SIMD in its standard encoding (Chromium 114+; not Node 20's V8).
const RELAXED_PROBE = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 19, 1, 17, 0,
  65, 0, 253, 15, 65, 0, 253, 15, 65, 0, 253, 15, 253, 133, 2, 11]);

// (func (param i32 i32 i32) (result i32) i8x16.splat of the first two, i32x4.splat of the third,
// i32x4.relaxed_dot_i8x16_i7x16_add_s, lane 0), run: the int8 GEMM's relaxed kernel needs the dot
// to be the sum it is defined as. Node 20's V8 validates both under --experimental-wasm-relaxed-simd
// but its dot gives 2 * (-3 * 5 * 4), not -3 * 5 * 4 + 7 = -53: that engine gets the SIMD128 module.
const DOT_BODY = [0, 32, 0, 253, 15, 32, 1, 253, 15, 32, 2, 253, 17, 253, 147, 2, 253, 27, 0, 11];
const DOT_PROBE = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 8, 1, 96, 3, 127, 127, 127, 1, 127, 3, 2, 1, 0, 7, 5, 1,
  1, 102, 0, 0, 10, DOT_BODY.length + 2, 1, DOT_BODY.length, ...DOT_BODY]);

export function relaxedSimdSupported() {
  try {
    if (!WebAssembly.validate(RELAXED_PROBE) || !WebAssembly.validate(DOT_PROBE)) return false;
    return new WebAssembly.Instance(new WebAssembly.Module(DOT_PROBE)).exports.f(-3, 5, 7) === -53;
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
  if (build === 'relaxed-simd') return new URL('../dist/lithe-relaxed-simd.wasm', import.meta.url);
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
  if (!res.ok) throw litheError(STATUS.IO, `cannot fetch ${url}: HTTP ${res.status}`);
  return new Uint8Array(await res.arrayBuffer());
}

// Compiles the module, streaming from the network in browsers (compiling while it downloads)
// when the server sends application/wasm, else from the bytes.
async function compile(source) {
  const remote = !isNode && !(source instanceof Uint8Array || source instanceof ArrayBuffer);
  if (remote && typeof WebAssembly.compileStreaming === 'function') {
    const url = source instanceof URL ? source : new URL(String(source), globalThis.location?.href);
    const res = await fetch(url);
    if (!res.ok) throw litheError(STATUS.IO, `cannot fetch ${url}: HTTP ${res.status}`);
    if ((res.headers.get('content-type') ?? '').startsWith('application/wasm')) return WebAssembly.compileStreaming(res);
    return WebAssembly.compile(await res.arrayBuffer());
  }
  return WebAssembly.compile(await readBytes(source));
}

const EBADF = 8, ENOSYS = 52;

// Whether the relaxed-SIMD module is chosen where it validates, unless init's options say: it is,
// as it measured faster in Chromium (docs/wasm.md, bench/runners/lithe_browser.mjs).
const RELAXED_DEFAULT = true;

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
    if (threadUrl) return new Worker(threadUrl, { type: 'module', name: `lithe thread ${slot + 1}` });
    // the literal form, options included, which bundlers that handle workers (webpack 5, Vite)
    // recognise and compile (Vite refuses options it cannot read statically)
    return new Worker(new URL('./thread.js', import.meta.url), { type: 'module' });
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
// extraImports(getMemory): more import namespaces (the WebGPU module's lithe_webgpu: webgpu.js).
export async function instantiate({ wasm, simd, relaxed, print, threads, threadUrl, extraImports } = {}) {
  const useSimd = simd ?? simdSupported();
  const want = Math.max(1, Math.min(65, Math.floor(threads ?? (await defaultThreads()))));
  let build = useSimd ? 'simd' : 'scalar';
  // The relaxed-SIMD module (f32x4.relaxed_madd in the GEMM) where the threads module will not run
  // and the engine validates the standard instruction: options.relaxed true / false forces or
  // refuses it.
  if (useSimd && !(want > 1 && threadsSupported()) && (relaxed ?? RELAXED_DEFAULT) && relaxedSimdSupported()) build = 'relaxed-simd';
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
  if (!module && build === 'relaxed-simd') {
    try {
      module = await compile(defaultUrl(build));
    } catch {
      build = 'simd'; // (a package built without it: the SIMD128 module)
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
  if (extraImports) Object.assign(imports, extraImports(() => memory));
  const instance = await WebAssembly.instantiate(module, imports);
  memory = instance.exports.memory ?? memory;
  instance.exports._initialize?.();
  let nthreads = 1;
  if (shared) {
    const workers = await startWorkers(module, memory, instance.exports, want - 1, threadUrl);
    // a browser's main thread may not block in memory.atomic.wait: it spins while it waits
    const canBlock = isNode || typeof document === 'undefined';
    const st = instance.exports.lithe_js_threads_ready(workers, canBlock ? 1 : 0);
    if (st !== 0) throw litheError(st, `the threads module refused ${workers} workers`);
    nthreads = workers + 1;
  }
  return { instance, exports: instance.exports, memory, simd: useSimd || shared, module, threads: nthreads, build };
}

// ---- the importer module ----
// lithe-importers.wasm holds the ONNX and TF.js importers and the graph executor (a model
// imported from either is a graph node), kept out of the core module so that the core stays small
// for the models most pages load. It is an Emscripten side module: position-independent code that
// imports the core's memory, function table and stack pointer, and the core functions it calls;
// linkImporters places its data in a block of the core's heap and its functions at the end of the
// table, resolves its imports from the core's exports, runs its constructors and registers its
// entry points with the core (lithe_js_importers_set). It also holds the CPU backend's convolution
// and pooling, so each core build has its own: lithe-importers-simd.wasm for the SIMD128 core,
// lithe-importers.wasm for the scalar one (which a SIMD128 core can link too, with slower
// convolutions), lithe-importers-relaxed-simd.wasm for the relaxed-SIMD core (simd = 'relaxed').

// (each URL a literal inside new URL(…, import.meta.url): the form Vite and webpack 5 emit assets for)
export function importersUrl(simd = false) {
  if (simd === 'relaxed') return new URL('../dist/lithe-importers-relaxed-simd.wasm', import.meta.url);
  return simd ? new URL('../dist/lithe-importers-simd.wasm', import.meta.url) : new URL('../dist/lithe-importers.wasm', import.meta.url);
}

export async function compileImporters(source, simd = false) {
  if (source instanceof WebAssembly.Module) return source;
  return compile(source === undefined || source === true ? importersUrl(simd) : source);
}

// The same, synchronously: Node only (a browser's main thread may not compile a module this size
// synchronously, and has no synchronous fetch). Returns null where it cannot.
export function compileImportersSync(source, simd = false) {
  if (source instanceof WebAssembly.Module) return source;
  if (source instanceof Uint8Array || source instanceof ArrayBuffer) return new WebAssembly.Module(source);
  const builtin = isNode && typeof process.getBuiltinModule === 'function' ? process.getBuiltinModule : null;
  if (!builtin) return null;
  const { readFileSync } = builtin('fs');
  const { fileURLToPath } = builtin('url');
  let where = source === undefined || source === true ? importersUrl(simd) : source;
  if (!(where instanceof URL) && /^[a-z][a-z0-9+.-]+:/i.test(String(where))) where = new URL(String(where));
  if (where instanceof URL && where.protocol !== 'file:') return null;
  return new WebAssembly.Module(readFileSync(where instanceof URL ? fileURLToPath(where) : where));
}

// The dylink.0 section's memory info: the bytes and alignment (log2) of the module's data, and
// how many table slots its functions take.
function dylinkInfo(module) {
  const [section] = WebAssembly.Module.customSections(module, 'dylink.0');
  if (!section) throw litheError(STATUS.FORMAT, 'the importer module has no dylink.0 section (not an Emscripten side module)');
  const b = new Uint8Array(section);
  let at = 0;
  const leb = () => {
    let v = 0, shift = 0, byte;
    do {
      byte = b[at++];
      v += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80);
    return v;
  };
  const info = { memorySize: 0, memoryAlign: 0, tableSize: 0 };
  while (at < b.length) {
    const kind = b[at++], size = leb(), end = at + size;
    if (kind === 1) { // WASM_DYLINK_MEM_INFO
      info.memorySize = leb();
      info.memoryAlign = leb();
      info.tableSize = leb();
    }
    at = end;
  }
  return info;
}

// Links a compiled importer module into a loaded core (what instantiate returned).
function timespecGet(memory, ts, base) {
  if (base !== 1) return 0;
  const ms = performance.timeOrigin + performance.now();
  const sec = Math.floor(ms / 1000);
  const mem = new Int32Array(memory.buffer, ts, 2);
  mem[0] = sec;
  mem[1] = Math.floor((ms - sec * 1000) * 1e6);
  return base;
}

export function linkImporters(loaded, module) {
  const core = loaded.exports;
  const table = core.__indirect_function_table;
  const info = dylinkInfo(module);
  let memoryBase = 0;
  if (info.memorySize) {
    const align = 2 ** info.memoryAlign;
    const block = core.malloc(info.memorySize + align); // never freed: the module stays for the instance's life
    if (!block) throw litheError(STATUS.OOM, `no memory for the importer module's ${info.memorySize} bytes of data`);
    memoryBase = Math.ceil(block / align) * align;
    new Uint8Array(core.memory.buffer, memoryBase, info.memorySize).fill(0);
  }
  const tableBase = table.length;
  if (info.tableSize) table.grow(info.tableSize);
  // A core function's table index (the address C code takes of it): its slot if it has one.
  let slots = null;
  const slotOf = (fn) => {
    if (!slots) {
      slots = new Map();
      for (let i = 0; i < table.length; i++) {
        const f = table.get(i);
        if (f && !slots.has(f)) slots.set(f, i);
      }
    }
    let i = slots.get(fn);
    if (i === undefined) {
      i = table.grow(1);
      table.set(i, fn);
      slots.set(fn, i);
    }
    return i;
  };
  const i32 = (value, mutable = false) => new WebAssembly.Global({ value: 'i32', mutable }, value);
  const env = {
    memory: core.memory, __indirect_function_table: table, __stack_pointer: core.__stack_pointer,
    __memory_base: i32(memoryBase), __table_base: i32(tableBase),
  };
  const imports = { env, 'GOT.func': {}, 'GOT.mem': {} };
  const got = []; // the addresses it takes (GOT.func: table slots; GOT.mem: data), set once it is instantiated
  for (const imp of WebAssembly.Module.imports(module)) {
    if (imp.module === 'env' && imp.kind === 'function') {
      if (typeof core[imp.name] === 'function') env[imp.name] = core[imp.name];
      // the graph profiler's clock (core/graph/graph_plan.c, LITHE_GRAPH_PROFILE through
      // lithe_set_options): Emscripten 3.1.6's timespec_get is JavaScript, so the loader gives it
      // (struct timespec: 32-bit tv_sec, then tv_nsec; TIME_UTC), or the profile reads garbage
      else if (imp.name === 'timespec_get') env[imp.name] = (ts, base) => timespecGet(core.memory, ts, base);
      // a host function (Emscripten implements a few libc calls in JavaScript): fails softly, as
      // the core's own do (instantiate)
      else if (!/^(lithe|js_)/.test(imp.name)) env[imp.name] = () => -ENOSYS;
      else throw litheError(STATUS.FORMAT, `the core module does not export ${imp.name}, which the importer module needs (mismatched builds?)`);
    } else if (imp.module === 'GOT.func' || imp.module === 'GOT.mem') {
      const g = i32(0, true);
      imports[imp.module][imp.name] = g;
      got.push([imp.module, imp.name, g]);
    }
  }
  const instance = new WebAssembly.Instance(module, imports);
  const side = instance.exports;
  // A symbol both define resolves to the importer module's: the core's lithe_onnx_load & co. are
  // the stubs that forward to it.
  for (const [kind, name, g] of got) {
    if (kind === 'GOT.func' && typeof side[name] === 'function') g.value = slotOf(side[name]);
    else if (kind === 'GOT.func' && typeof core[name] === 'function') g.value = slotOf(core[name]);
    else if (kind === 'GOT.mem' && side[name] instanceof WebAssembly.Global) g.value = memoryBase + side[name].value;
    else if (kind === 'GOT.mem' && core[name] instanceof WebAssembly.Global) g.value = core[name].value;
    else throw litheError(STATUS.FORMAT, `the importer module's ${kind} import ${name} is defined nowhere`);
  }
  side.__wasm_apply_data_relocs?.();
  side.__wasm_call_ctors?.();
  core.lithe_js_importers_set(side.lithe_importers());
  return instance;
}
