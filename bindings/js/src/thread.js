// A worker thread of the threads module (lithe-simd-threads.wasm), started by src/loader.js: a Web
// Worker in browsers, a worker_threads Worker in Node. It instantiates the module the page has on
// the page's shared memory (the module's start function sees the data already initialised and
// leaves it), moves C's stack pointer to the stack the main instance allocated for it, says it is
// ready, and enters lithe_js_thread_main: the thread pool's worker loop, which never returns (it
// blocks in memory.atomic.wait between jobs). It must not call _initialize: the constructors ran
// once, on the main instance, over this same memory. Self-contained (no imports), so that a bundler
// or a copy step can place it anywhere (lithe.init({ threadUrl })).
const isNode = typeof process !== 'undefined' && !!process.versions?.node && typeof self === 'undefined';
// (no top-level await: bundlers' worker formats (Vite's iife, webpack's) need none; in a browser the
// listener is added in this first task, before any message can arrive)
let port = isNode ? null : self;

// The module's imports: the shared memory, and for every function it imports an answer of "not
// supported" (a worker thread only runs kernels; it never writes messages or opens files).
function imports(module, memory) {
  const imp = { env: { memory } };
  for (const { module: ns, name, kind } of WebAssembly.Module.imports(module))
    if (kind === 'function') (imp[ns] ??= {})[name] = ns === 'env' ? () => -52 : () => 52;
  return imp;
}

function start({ module, memory, slot, stackTop }) {
  let exports;
  try {
    exports = new WebAssembly.Instance(module, imports(module, memory)).exports;
    exports.stackRestore(stackTop);
  } catch (e) {
    port.postMessage({ error: String(e?.message ?? e) });
    return;
  }
  port.postMessage({ ready: slot });
  exports.lithe_js_thread_main(slot);
}

if (isNode) {
  import(/* webpackIgnore: true */ /* @vite-ignore */ `node:${'worker_threads'}`).then(({ parentPort }) => {
    port = parentPort;
    port.once('message', start);
  });
} else {
  port.addEventListener('message', (e) => start(e.data), { once: true });
}
