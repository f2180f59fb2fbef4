// Ids and random masks (ports of backends/vulkan/shaders/{dropout,index,hash}.comp). Every binding
// is read as 32-bit words (floats through bitcast: gathers copy bits). Binding 1 is written.
//   OP 0: dropout_mask  Y[i] = (u_i >= rate) ? keep : 0, u_i the i-th uniform of the Philox4x32-10
//         stream (key, counter) as core/rng.c's lithe_rng_uniform: block i / 4 at counter + i / 4,
//         lane i % 4, u = (r >> 8) 2^-24: the CPU's bits. u0, u1 = key; u2, u3 = counter; u4 = n;
//         f0 = rate, f1 = keep.                                         (1 = Y)
//   OP 1: gather_rows   Y[i, :] = table[ids[i], :]                      (1 = Y, 2 = table, 3 = ids)
//   OP 2: scatter_add_rows  table[ids[i], :] += X[i, :], one invocation per column walking i in
//         order (duplicates accumulate in the CPU's order, no atomics)  (1 = table, 2 = X, 3 = ids)
//         u0 = B, u1 = N, u2 = ids are two words (int64 / uint64; the low word indexes).
//   OP 3: hash_ids  MurmurHash3_x64_128 of each uint64 id, out (B, 4) u32; u0 = B, u1 = seed
//                                                                        (1 = out, 2 = ids)
//!include wide
@group(0) @binding(1) var<storage, read_write> o: array<u32>;
@group(0) @binding(2) var<storage, read> a: array<u32>;
@group(0) @binding(3) var<storage, read> ids: array<u32>;

fn philox(c0: vec4<u32>, k0: vec2<u32>) -> vec4<u32> {
    var c = c0; var k = k0;
    for (var r = 0; r < 10; r++) {
        let hi0 = mulhi32(0xD2511F53u, c.x); let lo0 = 0xD2511F53u * c.x;
        let hi1 = mulhi32(0xCD9E8D57u, c.z); let lo1 = 0xCD9E8D57u * c.z;
        c = vec4<u32>(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
        k += vec2<u32>(0x9E3779B9u, 0xBB67AE85u);
    }
    return c;
}
fn fmix64(k0: vec2<u32>) -> vec2<u32> {
    var k = k0;
    k ^= shr64(k, 33u);
    k = mul64(k, vec2<u32>(0xed558ccdu, 0xff51afd7u));
    k ^= shr64(k, 33u);
    k = mul64(k, vec2<u32>(0x1a85ec53u, 0xc4ceb9feu));
    k ^= shr64(k, 33u);
    return k;
}
fn row_id(i: u32) -> u32 {
    if (U(2u) != 0u) { return ids[OFF(2u) + 2u * i]; }
    return ids[OFF(2u) + i];
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    if (OP == 0u) {
        let n = U(4u); let blocks = (n + 3u) / 4u;
        let key = vec2<u32>(U(0u), U(1u)); let ctr = vec2<u32>(U(2u), U(3u));
        let rate = F(0u); let keep = F(1u);
        for (var g = first(gid, nwg); g < blocks; g += stride(nwg)) {
            let c = add64(ctr, vec2<u32>(g, 0u));
            let r = philox(vec4<u32>(c.x, c.y, 0u, 0u), key);
            for (var j = 0u; j < 4u && g * 4u + j < n; j++) {
                let u = f32(r[j] >> 8u) * (1.0 / 16777216.0);
                o[OFF(0u) + g * 4u + j] = bitcast<u32>(select(0.0, keep, u >= rate));
            }
        }
    } else if (OP == 1u) {
        let B = U(0u); let N = U(1u);
        for (var e = first(gid, nwg); e < B * N; e += stride(nwg)) {
            let i = e / N; let j = e % N;
            o[OFF(0u) + e] = a[OFF(1u) + row_id(i) * N + j];
        }
    } else if (OP == 2u) {
        let B = U(0u); let N = U(1u);
        for (var j = first(gid, nwg); j < N; j += stride(nwg)) {
            for (var i = 0u; i < B; i++) {
                let t = OFF(0u) + row_id(i) * N + j;
                o[t] = bitcast<u32>(bitcast<f32>(o[t]) + bitcast<f32>(a[OFF(1u) + i * N + j]));
            }
        }
    } else {
        let B = U(0u); let seed = vec2<u32>(U(1u), 0u);
        for (var i = first(gid, nwg); i < B; i += stride(nwg)) {
            var k1 = vec2<u32>(a[OFF(1u) + 2u * i], a[OFF(1u) + 2u * i + 1u]);
            k1 = mul64(k1, vec2<u32>(0x114253d5u, 0x87c37b91u));
            k1 = rotl64(k1, 31u);
            k1 = mul64(k1, vec2<u32>(0x2745937fu, 0x4cf5ad43u));
            var h1 = seed ^ k1; var h2 = seed;
            h1 ^= vec2<u32>(8u, 0u);
            h2 ^= vec2<u32>(8u, 0u);
            h1 = add64(h1, h2);
            h2 = add64(h2, h1);
            h1 = fmix64(h1);
            h2 = fmix64(h2);
            h1 = add64(h1, h2);
            h2 = add64(h2, h1);
            o[OFF(0u) + 4u * i] = h1.x;
            o[OFF(0u) + 4u * i + 1u] = h1.y;
            o[OFF(0u) + 4u * i + 2u] = h2.x;
            o[OFF(0u) + 4u * i + 3u] = h2.y;
        }
    }
}
