// An esbuild plugin (Node, at build time) that gives an esbuild bundle the package's assets, as
// Vite and webpack 5 do on their own from the loader's `new URL('../dist/….wasm', import.meta.url)`
// (esbuild leaves such URLs as they are):
//
//   import { litheWasm } from 'lithe-wasm/esbuild';
//   await esbuild.build({ entryPoints: ['main.js'], bundle: true, format: 'esm', outdir: 'public/js',
//                         plugins: [litheWasm()] });
//
// The loader's URLs then point beside the bundle ('./lithe-simd.wasm'), and the .wasm files and the
// threads build's worker script (thread.js) are copied into the output folder when the build ends.
// format must be 'esm' (the loader reads import.meta.url).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const loaderPath = path.join(here, 'loader.js');
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export function litheWasm() {
  return {
    name: 'lithe-wasm',
    setup(build) {
      const real = fs.realpathSync(loaderPath);
      const filter = new RegExp(`^(${escape(loaderPath)}|${escape(real)})$`);
      build.onLoad({ filter }, async (args) => {
        const code = await fs.promises.readFile(args.path, 'utf8');
        return { contents: code.replaceAll("'../dist/", "'./"), loader: 'js', resolveDir: path.dirname(args.path) };
      });
      build.onEnd(async (result) => {
        if (result.errors.length) return;
        const o = build.initialOptions;
        const out = o.outdir ?? (o.outfile ? path.dirname(o.outfile) : null);
        if (!out) return; // (write: false or stdout: nothing to place the assets beside)
        await fs.promises.mkdir(out, { recursive: true });
        const dist = path.join(here, '..', 'dist');
        for (const f of await fs.promises.readdir(dist))
          if (f.endsWith('.wasm')) await fs.promises.copyFile(path.join(dist, f), path.join(out, f));
        await fs.promises.copyFile(path.join(here, 'thread.js'), path.join(out, 'thread.js'));
      });
    },
  };
}
export default litheWasm;
