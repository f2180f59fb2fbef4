// The WebGPU side of lithe-webgpu.wasm: the command recorder behind the module's `lithe_webgpu`
// imports (backends/webgpu/webgpu_internal.h), and the Asyncify driver for its one asynchronous
// import (read: mapAsync). Loaded only when a page asks for device 'webgpu' (index.js), so the
// CPU-only modules and their loader never carry it. docs/backends.md, "WebGPU".
//
// What C records, JS queues: a dispatch is {pipeline, buffers, a 128-byte parameter block,
// workgroups}; a copy is {src, dst, offsets, size}. Nothing reaches the GPU until a
// synchronisation point (a read-back, an upload over queued work, lithe_backend_sync): then every
// queued command is encoded into ONE command encoder (consecutive dispatches share one compute
// pass; WebGPU orders their storage accesses), the parameter blocks go up in one writeBuffer, and
// the queue gets one submit. Pipelines are made on first use of a (shader, OP) pair from the WGSL
// the C side passes (lazy compilation), with an explicit layout per binding pattern, and cached.

const PARAMS = 128; // bytes of a parameter block (lithe__wg_params)
const PARAM_STRIDE = 256; // minUniformBufferOffsetAlignment's default

// Dawn's Node binding destroys its GPU instance (and every device) when the object create([])
// gave is collected: keep each one a device came from.
const keepAlive = new Set();

// Finds a WebGPU device: `gpu` is navigator.gpu in browsers, or the `webgpu` package's create([])
// in Node. Answers {device} or {device: null, reason}.
export async function requestDevice(gpu) {
  gpu ??= globalThis.navigator?.gpu;
  if (!gpu) return { device: null, reason: 'WebGPU is not available here (no navigator.gpu; in Node pass options.gpu, e.g. the webgpu package\'s create([]))' };
  let adapter = null;
  try {
    adapter = await gpu.requestAdapter();
  } catch (e) {
    return { device: null, reason: `requestAdapter failed: ${e?.message ?? e}` };
  }
  if (!adapter) return { device: null, reason: 'no WebGPU adapter (requestAdapter() gave null)' };
  const want = ['maxStorageBufferBindingSize', 'maxBufferSize', 'maxComputeWorkgroupStorageSize'];
  const requiredLimits = {};
  for (const k of want) if (adapter.limits?.[k]) requiredLimits[k] = adapter.limits[k];
  // subgroups (Chromium's and Dawn's SwiftShader adapters have them): the GEMM's subgroup variant
  const requiredFeatures = adapter.features?.has?.('subgroups') ? ['subgroups'] : [];
  try {
    const device = await adapter.requestDevice({ requiredLimits, requiredFeatures });
    keepAlive.add(gpu);
    return { device, adapter, info: adapter.info };
  } catch (e) {
    return { device: null, reason: `requestDevice failed: ${e?.message ?? e}` };
  }
}

// Asyncify (Binaryen's pass, applied at build time): an import that returns a promise unwinds the
// wasm stack into a buffer; call() awaits the promise, rewinds and re-enters the export, which
// resumes where it left off with the promise's value as the import's result.
export class Asyncify {
  constructor(dataSize = 1 << 16) {
    this.dataSize = dataSize;
    this.exports = null;
    this.pending = null;
    this.value = 0;
    this.active = false;
  }
  attach(instance, malloc) {
    this.exports = instance.exports;
    this.data = malloc(this.dataSize + 8);
    if (!this.data) throw new Error('lithe webgpu: no memory for the Asyncify stack');
  }
  // The import `fn` made suspendable: a promise it returns suspends the module. Outside call()
  // (a synchronous call into the module) nothing may suspend: refuse() answers instead.
  wrap(fn, refuse) {
    return (...args) => {
      const ex = this.exports;
      if (ex.asyncify_get_state() === 2) { // rewinding: the promise resolved
        ex.asyncify_stop_rewind();
        return this.value;
      }
      if (!this.active) return refuse();
      const r = fn(...args);
      if (!(r instanceof Promise)) return r;
      this.pending = r;
      const dv = new DataView(ex.memory.buffer);
      dv.setUint32(this.data, this.data + 8, true);
      dv.setUint32(this.data + 4, this.data + 8 + this.dataSize, true);
      ex.asyncify_start_unwind(this.data);
      return 0;
    };
  }
  // Calls an export, awaiting any read-backs it makes; resolves with its result.
  async call(name, ...args) {
    const ex = this.exports;
    if (this.active) throw new Error(`lithe webgpu: ${name} called while another call waits for the GPU (await it first)`);
    this.active = true;
    try {
      return await this.#run(ex, name, args);
    } finally {
      this.active = false;
    }
  }
  async #run(ex, name, args) {
    let r = ex[name](...args);
    while (ex.asyncify_get_state() === 1) { // unwound: wait, then re-enter
      ex.asyncify_stop_unwind();
      try {
        this.value = await this.pending;
      } catch (e) {
        this.value = -1;
      }
      this.pending = null;
      ex.asyncify_start_rewind(this.data);
      r = ex[name](...args);
    }
    return r;
  }
}

// The recorder: imports for the module, bound to `device`; getMemory() gives the instance's memory.
export function webgpuImports(device, getMemory, asyncify, adapterInfo = null) {
  const buffers = [null]; // id 0: none
  const freeIds = [];
  const pipelines = new Map(); // `${shader}:${op}` -> GPUComputePipeline
  const layouts = new Map(); // `${n}:${writable}` -> {bgl, pl}
  let queued = []; // {kind: 'dispatch' | 'copy', ...}
  let params = new Uint8Array(PARAM_STRIDE * 64);
  let nParams = 0;
  let paramBuf = null;
  let lastError = '';
  const stats = { dispatches: 0, submits: 0, copies: 0, readbacks: 0, pipelines: 0, buffers: 0, uploads: 0, clears: 0 };
  const staged = []; // upload staging buffers of the queued work, destroyed after its submit
  const STORAGE = 0x80, COPY_SRC = 0x04, COPY_DST = 0x08, MAP_READ = 0x01, UNIFORM = 0x40; // GPUBufferUsage
  const decoder = new TextDecoder();
  const mem = () => new Uint8Array(getMemory().buffer);

  function layoutFor(n, writable) {
    const key = `${n}:${writable}`;
    let l = layouts.get(key);
    if (!l) {
      const entries = [{ binding: 0, visibility: 4 /* COMPUTE */, buffer: { type: 'uniform' } }];
      for (let b = 0; b < n; b++)
        entries.push({ binding: b + 1, visibility: 4, buffer: { type: (writable >> b) & 1 ? 'storage' : 'read-only-storage' } });
      const bgl = device.createBindGroupLayout({ entries });
      l = { bgl, pl: device.createPipelineLayout({ bindGroupLayouts: [bgl] }) };
      layouts.set(key, l);
    }
    return l;
  }

  function pipelineFor(shader, srcPtr, srcLen, op, n, writable) {
    const key = `${shader}:${op}`;
    let p = pipelines.get(key);
    if (!p) {
      const code = decoder.decode(mem().slice(srcPtr, srcPtr + srcLen));
      const module = device.createShaderModule({ code });
      const { pl } = layoutFor(n, writable);
      p = { pipeline: device.createComputePipeline({ layout: pl, compute: { module, entryPoint: 'main', constants: { OP: op } } }), n, writable };
      pipelines.set(key, p);
      stats.pipelines++;
    }
    return p;
  }

  // Encodes everything queued into one encoder, one submit.
  function flush() {
    if (!queued.length) return;
    if (nParams) {
      const need = nParams * PARAM_STRIDE;
      if (!paramBuf || paramBuf.size < need) {
        paramBuf?.destroy();
        paramBuf = device.createBuffer({ size: Math.max(need, 64 * PARAM_STRIDE) * 2, usage: UNIFORM | COPY_DST });
      }
      device.queue.writeBuffer(paramBuf, 0, params, 0, need);
    }
    const enc = device.createCommandEncoder();
    let pass = null;
    for (const c of queued) {
      if (c.kind === 'dispatch') {
        if (!pass) pass = enc.beginComputePass();
        const entries = [{ binding: 0, resource: { buffer: paramBuf, offset: c.param * PARAM_STRIDE, size: PARAMS } }];
        for (let b = 0; b < c.bufs.length; b++) entries.push({ binding: b + 1, resource: { buffer: buffers[c.bufs[b]] } });
        const { bgl } = layoutFor(c.p.n, c.p.writable);
        pass.setPipeline(c.p.pipeline);
        pass.setBindGroup(0, device.createBindGroup({ layout: bgl, entries }));
        pass.dispatchWorkgroups(c.gx, c.gy);
      } else {
        if (pass) {
          pass.end();
          pass = null;
        }
        if (c.kind === 'clear') enc.clearBuffer(c.dst, c.dstOff, c.n);
        else enc.copyBufferToBuffer(c.src, c.srcOff, c.dst, c.dstOff, c.n);
      }
    }
    if (pass) pass.end();
    device.queue.submit([enc.finish()]);
    stats.submits++;
    queued = [];
    nParams = 0;
    for (const b of staged.splice(0)) b.destroy();
  }

  function fail(msg) {
    lastError = msg;
    return 1;
  }

  const imports = {
    available(whyPtr, cap) {
      if (device) return 1;
      const msg = new TextEncoder().encode('the page did not ask for WebGPU (load with device: \'webgpu\')');
      mem().set(msg.subarray(0, Math.max(0, cap - 1)), whyPtr);
      mem()[whyPtr + Math.min(msg.length, cap - 1)] = 0;
      return 0;
    },
    buffer_create(bytes) {
      try {
        const buf = device.createBuffer({ size: bytes, usage: STORAGE | COPY_SRC | COPY_DST });
        const id = freeIds.length ? freeIds.pop() : buffers.length;
        buffers[id] = buf;
        stats.buffers++;
        return id;
      } catch (e) {
        lastError = `createBuffer(${bytes}): ${e?.message ?? e}`;
        return 0;
      }
    },
    buffer_destroy(id) {
      flush(); // queued work may still use it
      buffers[id]?.destroy();
      buffers[id] = null;
      freeIds.push(id);
    },
    write(id, off, ptr, n) {
      if (off % 4) return fail(`upload at byte ${off}: WebGPU writes start on 4-byte boundaries`);
      const n4 = (n + 3) & ~3;
      stats.uploads++;
      if (queued.length) {
        // queued work may read the old contents: the bytes go to a staging buffer now and are
        // copied in order with the queued commands (no submit of their own)
        const st = device.createBuffer({ size: n4, usage: COPY_SRC, mappedAtCreation: true });
        new Uint8Array(st.getMappedRange()).set(mem().subarray(ptr, ptr + n));
        st.unmap();
        staged.push(st);
        queued.push({ kind: 'copy', src: st, srcOff: 0, dst: buffers[id], dstOff: off, n: n4 });
        return 0;
      }
      let src = mem().subarray(ptr, ptr + n);
      if (n4 !== n) {
        const padded = new Uint8Array(n4);
        padded.set(src);
        src = padded;
      }
      device.queue.writeBuffer(buffers[id], off, src, 0, n4);
      return 0;
    },
    // Queues a zero fill of n bytes at off (4-byte aligned): a clear command, not a dispatch.
    clear(id, off, n) {
      queued.push({ kind: 'clear', dst: buffers[id], dstOff: off, n });
      stats.clears++;
    },
    // What the adapter offers the shaders: bit 0 subgroups, bit 1 the adapter runs on the CPU
    // (SwiftShader, a fallback adapter: the GEMM takes its barrier-free vec4 kernel), bits 8..15
    // its smallest subgroup size, bits 16..23 its largest (0: unknown).
    features() {
      const cpu = adapterInfo?.architecture === 'swiftshader' || adapterInfo?.isFallbackAdapter === true ? 2 : 0;
      if (!device?.features?.has?.('subgroups')) return cpu;
      const min = adapterInfo?.subgroupMinSize ?? 0, max = adapterInfo?.subgroupMaxSize ?? 0;
      return 1 | cpu | ((min & 255) << 8) | ((max & 255) << 16);
    },
    read: asyncify.wrap((id, off, ptr, n) => {
      const a0 = off & ~3, a1 = (off + n + 3) & ~3;
      const staging = device.createBuffer({ size: a1 - a0, usage: MAP_READ | COPY_DST });
      queued.push({ kind: 'copy', src: buffers[id], srcOff: a0, dst: staging, dstOff: 0, n: a1 - a0 });
      flush(); // the copy rides in the same submit as the queued work
      stats.readbacks++;
      return staging.mapAsync(1 /* GPUMapMode.READ */).then(() => {
        const bytes = new Uint8Array(staging.getMappedRange()).slice(off - a0, off - a0 + n);
        mem().set(bytes, ptr);
        staging.unmap();
        staging.destroy();
        return 0;
      }, (e) => {
        lastError = `mapAsync: ${e?.message ?? e}`;
        staging.destroy();
        return 1;
      });
    }, () => fail('a read-back from the GPU needs the asynchronous API (predictAsync, trainStepAsync)')),
    copy(src, srcOff, dst, dstOff, n) {
      queued.push({ kind: 'copy', src: buffers[src], srcOff, dst: buffers[dst], dstOff, n });
      stats.copies++;
    },
    dispatch(shader, srcPtr, srcLen, op, bufsPtr, n, writable, paramsPtr, gx, gy) {
      let p;
      try {
        p = pipelineFor(shader, srcPtr, srcLen, op, n, writable);
      } catch (e) {
        return fail(`pipeline for shader ${shader} OP ${op}: ${e?.message ?? e}`);
      }
      const bufs = Array.from(new Uint32Array(getMemory().buffer, bufsPtr, n));
      if ((nParams + 1) * PARAM_STRIDE > params.length) {
        const grown = new Uint8Array(params.length * 2);
        grown.set(params);
        params = grown;
      }
      params.set(mem().subarray(paramsPtr, paramsPtr + PARAMS), nParams * PARAM_STRIDE);
      queued.push({ kind: 'dispatch', p, bufs, param: nParams++, gx, gy });
      stats.dispatches++;
      return 0;
    },
    flush,
    last_error(ptr, cap) {
      const msg = new TextEncoder().encode(lastError || 'unknown error');
      const n = Math.min(msg.length, cap - 1);
      mem().set(msg.subarray(0, n), ptr);
      mem()[ptr + n] = 0;
    },
  };
  // WebGPU reports validation errors asynchronously; keep the first for the tests and the page.
  const errors = [];
  device?.addEventListener?.('uncapturederror', (ev) => errors.push(ev.error?.message ?? String(ev.error)));
  return { imports: { lithe_webgpu: imports }, stats, errors, flush };
}
