// Type declarations for the thin layer (src/raw.js): the C API by name. Pointers are numbers
// (offsets into the module's memory); statuses are lithe_status numbers.
export declare const STATUS: Readonly<Record<string, number>>;
export declare const DTYPE: Readonly<Record<string, number>>;
export declare class LitheError extends Error {
  readonly status: number;
  readonly statusName: string;
  readonly detail: string;
}
export interface Raw {
  readonly exports: WebAssembly.Exports;
  readonly memory: WebAssembly.Memory;
  readonly simd: boolean;
  /** The RuntimeError of a trap, after which every call throws; null while healthy. */
  readonly trapped: WebAssembly.RuntimeError | null;
  /** Every exported lithe_* and lithe_js_* function, e.g. raw.lithe_model_load_bytes(ptr, len, outPtr).
   *  Pointers, sizes, enums and statuses are numbers; int64/uint64 parameters and results
   *  (seeds, ids, numel) are bigints, as WebAssembly's JS API passes i64. */
  readonly [cName: `lithe_${string}`]: (...args: Array<number | bigint>) => any;
  malloc(n: number): number;
  free(ptr: number): void;
  /** A Uint8Array over the current memory (remade after growth). */
  u8(): Uint8Array;
  dv(): DataView;
  /** An Int32Array over the current memory (remade after growth). */
  i32(): Int32Array;
  /** A Float32Array over the current memory (remade after growth). */
  f32(): Float32Array;
  cstring(ptr: number): string | null;
  allocString(s: string): number;
  allocBytes(bytes: Uint8Array | ArrayBuffer): number;
  /** Throws a LitheError with lithe_last_error()'s message unless status is LITHE_OK. */
  check(status: number): void;
  /** The i-th 4-byte out-parameter slot of a shared scratch block. */
  outPtr(i?: number): number;
  readU32(ptr: number): number;
  readF32(ptr: number): number;
}
export declare function createRaw(loaded: { exports: WebAssembly.Exports; memory: WebAssembly.Memory; simd: boolean }): Raw;
