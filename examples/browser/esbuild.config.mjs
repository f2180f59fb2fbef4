// esbuild leaves new URL('…', import.meta.url) alone, so the package brings a plugin that points
// the loader beside the bundle and copies the .wasm files (and the worker script) there.
import * as esbuild from 'esbuild';
import { litheWasm } from 'lithe-wasm/esbuild';

await esbuild.build({
  entryPoints: ['main.js'],
  bundle: true,
  format: 'esm', // the loader reads import.meta.url
  outdir: 'out-esbuild',
  plugins: [litheWasm()],
});
