// The thin layer: the C API as the module exports it, one JS function per C function, taking and
// returning what C does (pointers are numbers into the module's memory, statuses are numbers),
// plus the memory helpers a caller of such an API needs. The idiomatic layer (index.js) is
// written against this; use it directly for anything index.js does not cover.

export const STATUS = Object.freeze({
  OK: 0, INVALID_ARG: 1, SHAPE: 2, DTYPE: 3, OOM: 4, NOT_FOUND: 5, STATE: 6, UNSUPPORTED: 7, IO: 8, FORMAT: 9,
  VALUE: 10, INTERNAL: 11,
});
export const DTYPE = Object.freeze({ F32: 0, F16: 1, BF16: 2, I32: 3, I64: 4, U64: 5, U8: 6, U32: 7 });

// A lithe error: `status` is the lithe_status number, `statusName` its name ("LITHE_ERR_SHAPE"),
// `detail` lithe_last_error()'s text (or this layer's, for what it checks itself: arguments, files,
// fetches, the module); `cause` the underlying error where there is one (Node's ENOENT, a
// WebAssembly.RuntimeError, ...). Every error the package throws is one.
export class LitheError extends Error {
  constructor(status, statusName, detail, options) {
    super(`${statusName}: ${detail}`, options);
    this.name = 'LitheError';
    this.status = status;
    this.statusName = statusName;
    this.detail = detail;
  }
}

const STATUS_NAME = Object.fromEntries(Object.entries(STATUS).map(([k, v]) => [v, v === 0 ? 'LITHE_OK' : `LITHE_ERR_${k}`]));
// A LitheError for a status this JS layer decides (the name as lithe_status_str has it).
export function litheError(status, detail, cause) {
  return new LitheError(status, STATUS_NAME[status], detail, cause === undefined ? undefined : { cause });
}

export function createRaw(loaded) {
  const { exports, memory } = loaded;
  const raw = { exports, memory, simd: loaded.simd, threads: loaded.threads ?? 1, build: loaded.build };
  // Every exported lithe_* / lithe_js_* function under its C name. lithe reports errors as
  // statuses, so a trap (an out-of-bounds access, unreachable) can only be a bug or a bad pointer
  // handed to this layer; memory may then be inconsistent, so the instance refuses further calls
  // with an error that says so, rather than computing on corrupt state.
  raw.trapped = null;
  const guard = (name, fn) => (...args) => {
    if (raw.trapped) throw litheError(STATUS.INTERNAL, `this WebAssembly instance trapped earlier (${raw.trapped.message}) and cannot be used; reload the page or restart the process`, raw.trapped);
    try {
      return fn(...args);
    } catch (e) {
      if (!(e instanceof WebAssembly.RuntimeError)) throw e;
      raw.trapped = e;
      throw litheError(STATUS.INTERNAL, `the WebAssembly instance trapped in ${name} (${e.message}): a bug, or a bad pointer given to c()`, e);
    }
  };
  // (lithe__* exports are internals the importer module calls, not API)
  for (const [name, fn] of Object.entries(exports)) if (typeof fn === 'function' && name.startsWith('lithe_') && !name.startsWith('lithe__')) raw[name] = guard(name, fn);
  raw.malloc = guard('malloc', exports.malloc);
  raw.free = guard('free', exports.free);

  // Views are remade when memory grows. A module's own memory detaches its old ArrayBuffer then, so
  // a view of it reads length 0 and nothing else needs checking (memory.buffer is a call into the
  // engine, several per predict); a shared memory (the threads module's) keeps the old buffer at its
  // old length, so there the view's buffer is compared with the memory's.
  const shared = typeof SharedArrayBuffer !== 'undefined' && memory.buffer instanceof SharedArrayBuffer;
  const fresh = shared ? (v) => v && v.buffer === memory.buffer : (v) => v && v.length;
  let u8 = null;
  raw.u8 = () => (fresh(u8) ? u8 : (u8 = new Uint8Array(memory.buffer)));
  raw.dv = () => new DataView(memory.buffer);
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  raw.cstring = (ptr) => {
    if (!ptr) return null;
    const m = raw.u8();
    let end = ptr;
    while (m[end]) end++;
    // a copy: TextDecoder refuses views of shared memory (the threads module's)
    return decoder.decode(m.buffer instanceof ArrayBuffer ? m.subarray(ptr, end) : m.slice(ptr, end));
  };
  // A NUL-terminated copy of a JS string in module memory; the caller frees it.
  raw.allocString = (s) => {
    const bytes = encoder.encode(s);
    const p = raw.malloc(bytes.length + 1);
    if (!p) throw litheError(STATUS.OOM, 'malloc failed');
    raw.u8().set(bytes, p);
    raw.u8()[p + bytes.length] = 0;
    return p;
  };
  raw.allocBytes = (bytes) => {
    const p = raw.malloc(Math.max(1, bytes.byteLength));
    if (!p) throw litheError(STATUS.OOM, `malloc(${bytes.byteLength}) failed`);
    raw.u8().set(bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes), p);
    return p;
  };
  // A status other than LITHE_OK becomes a LitheError carrying lithe_last_error()'s message.
  raw.check = (status) => {
    if (status === STATUS.OK) return;
    throw new LitheError(status, raw.cstring(exports.lithe_status_str(status)), raw.cstring(exports.lithe_last_error()));
  };
  // Scratch space for out-parameters (pointer and size slots); the API is synchronous, so one
  // block serves every call. Slots 0..15 are outPtr's; slots 16..63 are index.js's (a tensor's
  // dtype, rank and extents, passed without a malloc per call).
  raw.scratch = raw.malloc(256);
  raw.outPtr = (i = 0) => raw.scratch + 4 * i;
  // (views cached like u8: a predict reads several slots, and a DataView per read showed in profiles)
  let i32 = null, f32 = null;
  raw.i32 = () => (fresh(i32) ? i32 : (i32 = new Int32Array(memory.buffer)));
  raw.readU32 = (p) => (p & 3 ? raw.dv().getUint32(p, true) : raw.i32()[p >>> 2] >>> 0);
  raw.f32 = () => (fresh(f32) ? f32 : (f32 = new Float32Array(memory.buffer)));
  raw.readF32 = (p) => (p & 3 ? raw.dv().getFloat32(p, true) : raw.f32()[p >>> 2]);
  return raw;
}
