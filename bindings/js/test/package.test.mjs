// The package with the build init() picks by feature detection (SIMD128 in Node 20).
import { suite } from './suite.mjs';
suite({ simd: undefined });
