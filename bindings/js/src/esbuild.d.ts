// Type declarations for `lithe-wasm/esbuild` (src/esbuild.js): an esbuild plugin that places the
// package's .wasm files and worker script beside the bundle.
export interface EsbuildPlugin {
  name: string;
  setup(build: unknown): void;
}
/** plugins: [litheWasm()] in esbuild's build options (format: 'esm'). */
export declare function litheWasm(): EsbuildPlugin;
export default litheWasm;
