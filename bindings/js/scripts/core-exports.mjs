// Build step (bindings/js/CMakeLists.txt): the core module's exports, as an emcc response file —
// the package's own list (every LITHE_API and lithe_js_* function, given as the third argument),
// plus whatever the importer module imports from it: functions (env.*, and GOT.func.* for the
// addresses it takes), data addresses (GOT.mem.*) and the stack pointer it shares. Read from the
// built lithe-importers.wasm, so the list cannot drift from the code.
//   node core-exports.mjs lithe-importers.wasm out.rsp _malloc,_free,...
import fs from 'node:fs';

const [sidePath, outPath, base] = process.argv.slice(2);
// The side module's imports, read from its import section rather than by compiling it (the
// relaxed-SIMD build's holds instructions Node 20 does not validate).
function moduleImports(bytes) {
  let at = 8;
  const leb = () => {
    let v = 0, shift = 0, b;
    do { b = bytes[at++]; v += (b & 0x7f) * 2 ** shift; shift += 7; } while (b & 0x80);
    return v;
  };
  const name = () => { const n = leb(); const s = Buffer.from(bytes.subarray(at, at + n)).toString('utf8'); at += n; return s; };
  const limits = () => { const flags = bytes[at++]; leb(); if (flags & 1) leb(); };
  const out = [];
  while (at < bytes.length) {
    const id = bytes[at++], size = leb(), end = at + size;
    if (id === 2) {
      for (let n = leb(); n > 0; n--) {
        const module = name(), field = name(), kind = bytes[at++];
        if (kind === 0) leb();
        else if (kind === 1) { at++; limits(); }
        else if (kind === 2) limits();
        else if (kind === 3) at += 2;
        else if (kind === 4) { at++; leb(); }
        out.push({ module, name: field, kind: ['function', 'table', 'memory', 'global', 'tag'][kind] });
      }
    }
    at = end;
  }
  return out;
}
const side = moduleImports(new Uint8Array(fs.readFileSync(sidePath)));
const funcs = new Set(base.split(',').filter(Boolean));
const data = new Set();
const provided = new Set(['__memory_base', '__table_base', '__stack_pointer', 'memory', '__indirect_function_table']);
// Functions Emscripten 3.1.6 implements in JavaScript: a standalone module imports them from the
// host: the loader gives the importer module the graph profiler's clock (core/graph/graph_plan.c)
// from performance.now(), and soft-failure stand-ins as the core's for the rest.
const host = new Set(['timespec_get']);
for (const imp of side) {
  if (imp.module === 'env' && imp.kind === 'function' && host.has(imp.name)) continue;
  if (imp.module === 'env' && imp.kind === 'function') funcs.add(`_${imp.name}`);
  else if (imp.module === 'GOT.func') funcs.add(`_${imp.name}`);
  else if (imp.module === 'GOT.mem') data.add(imp.name);
  else if (!(imp.module === 'env' && provided.has(imp.name))) {
    console.error(`core-exports: the importer module imports ${imp.module}.${imp.name} (${imp.kind}), which the loader does not provide`);
    process.exit(1);
  }
}
// (--undefined pulls a libc function that only the importer module calls out of the archive)
const lines = [`-sEXPORTED_FUNCTIONS=${[...funcs].join(',')}`, '-Wl,--export=__stack_pointer',
  ...[...funcs].map((f) => `-Wl,--undefined=${f.slice(1)}`), ...[...data].map((d) => `-Wl,--export=${d}`)];
fs.writeFileSync(outPath, lines.join('\n') + '\n');
