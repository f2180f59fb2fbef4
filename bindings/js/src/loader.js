// Loading the WebAssembly module: picks the SIMD128 build when the engine validates a SIMD
// instruction (WebAssembly has no run-time CPU dispatch), else the scalar one, and instantiates it
// with the few imports the standalone module has (stdout/stderr writes for messages; everything
// else answers "not supported"). Same code in Node, browsers and Web Workers.

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

// The module's URL next to this file (bundlers understand `new URL(literal, import.meta.url)` and
// copy the asset); both literals appear so both files are emitted.
function defaultUrl(simd) {
  return simd ? new URL('../dist/lithe-simd.wasm', import.meta.url) : new URL('../dist/lithe-scalar.wasm', import.meta.url);
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

// Instantiates the module; `print(fd, text)` receives what C writes to stdout (1) / stderr (2).
export async function instantiate({ wasm, simd, print } = {}) {
  const useSimd = simd ?? simdSupported();
  let module;
  if (wasm instanceof WebAssembly.Module) module = wasm;
  else module = await compile(wasm ?? defaultUrl(useSimd));

  let memory = null;
  const decoder = new TextDecoder();
  const pending = { 1: '', 2: '' };
  const out = print ?? ((fd, text) => (fd === 2 ? console.warn : console.log)(text));
  const wasi = {
    fd_write(fd, iovs, iovsLen, nwrittenPtr) {
      const dv = new DataView(memory.buffer);
      let n = 0;
      for (let i = 0; i < iovsLen; i++) {
        const ptr = dv.getUint32(iovs + 8 * i, true), len = dv.getUint32(iovs + 8 * i + 4, true);
        if (fd === 1 || fd === 2) pending[fd] += decoder.decode(new Uint8Array(memory.buffer, ptr, len));
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
  // Whatever else the module imports (file syscalls: there is no file system here) fails softly:
  // lithe turns it into LITHE_ERR_IO, never a trap.
  const imports = { wasi_snapshot_preview1: { ...wasi }, env: { ...env } };
  for (const imp of WebAssembly.Module.imports(module)) {
    if (imp.kind !== 'function') continue;
    const ns = (imports[imp.module] ??= {});
    if (!(imp.name in ns)) ns[imp.name] = imp.module === 'env' ? () => -ENOSYS : () => ENOSYS;
  }
  const instance = await WebAssembly.instantiate(module, imports);
  memory = instance.exports.memory;
  instance.exports._initialize?.();
  return { instance, exports: instance.exports, memory, simd: useSimd, module };
}
