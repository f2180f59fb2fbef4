// Thinc's SparseLinear and murmurhash's hash_unicode (backends/vulkan's sparse.comp; the CPU's
// sparse.c is the reference): MurmurHash3_x86_32 in 32-bit words. Binding 1 is written (words:
// floats through bitcast), binding 5 = starts (B + 1 ints, or the n + 1 string offsets).
//   OP 0: sparse_linear  Y (B, nO) += values[i] (W[at(h0)] + W[at(h1)]) per class, one invocation
//         per (sequence, class) walking its keys in order  (1 = Y, 2 = keys, 3 = values, 4 = W, 5 = starts)
//   OP 1: sparse_linear_backward  dW += dY[b, c] values[i] at the same places; one invocation per
//         class walking every key in order (v2: classes own disjoint parts of W), or a single one
//         for v1, whose classes overlap (Thinc's bug #752)  (1 = dW, 2 = keys, 3 = values, 4 = dY, 5 = starts)
//   OP 2: hash_strings  out (n,) uint64 = the hash of string i read as int32, widened
//                                                           (1 = out, 2 = bytes, 5 = offsets)
// u0 = B (or n), u1 = nO, u2 = length, u3 = v1, u4 = seed.
//!include wide
@group(0) @binding(1) var<storage, read_write> o: array<u32>;
@group(0) @binding(2) var<storage, read> keys: array<u32>;
@group(0) @binding(3) var<storage, read> vals: array<f32>;
@group(0) @binding(4) var<storage, read> w: array<f32>;
@group(0) @binding(5) var<storage, read> starts: array<i32>;

fn mix_k1(k1: u32) -> u32 { return rotl32(k1 * 0xcc9e2d51u, 15u) * 0x1b873593u; }
fn fmix32(h0: u32) -> u32 {
    var h = h0;
    h ^= h >> 16u; h *= 0x85ebca6bu; h ^= h >> 13u; h *= 0xc2b2ae35u; h ^= h >> 16u;
    return h;
}
fn murmur_u64(key: vec2<u32>, seed: u32) -> u32 {
    var h = seed;
    h ^= mix_k1(key.x); h = rotl32(h, 13u) * 5u + 0xe6546b64u;
    h ^= mix_k1(key.y); h = rotl32(h, 13u) * 5u + 0xe6546b64u;
    h ^= 8u;
    return fmix32(h);
}
fn byte_at(i: u32) -> u32 { return (keys[OFF(1u) + i / 4u] >> ((i % 4u) * 8u)) & 0xFFu; }
// (i1, i2, step) of key k for class 0
fn sparse_index(k: u32) -> vec3<u32> {
    let key = vec2<u32>(keys[OFF(1u) + 2u * k], keys[OFF(1u) + 2u * k + 1u]);
    let h1 = murmur_u64(key, 0u); let h2 = murmur_u64(key, 1u); let len = U(2u);
    if (U(3u) != 0u) { return vec3<u32>(h1 & (len - 1u), h2 & (len - 1u), 1u); }
    return vec3<u32>(h1 % len, h2 % len, len);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let B = U(0u); let nO = U(1u);
    if (OP == 0u) {
        for (var e = first(gid, nwg); e < B * nO; e += stride(nwg)) {
            let b = e / nO; let c = e % nO;
            var y = bitcast<f32>(o[OFF(0u) + e]);
            for (var k = starts[OFF(4u) + b]; k < starts[OFF(4u) + b + 1u]; k++) {
                let ix = sparse_index(u32(k));
                let v = vals[OFF(2u) + u32(k)];
                y += w[OFF(3u) + ix.x + c * ix.z] * v;
                y += w[OFF(3u) + ix.y + c * ix.z] * v;
            }
            o[OFF(0u) + e] = bitcast<u32>(y);
        }
    } else if (OP == 1u) {
        let v1 = U(3u) != 0u;
        let classes = select(nO, 1u, v1);
        for (var cc = first(gid, nwg); cc < classes; cc += stride(nwg)) {
            for (var b = 0u; b < B; b++) {
                for (var k = starts[OFF(4u) + b]; k < starts[OFF(4u) + b + 1u]; k++) {
                    let ix = sparse_index(u32(k));
                    let v = vals[OFF(2u) + u32(k)];
                    let c0 = select(cc, 0u, v1); let c1 = select(cc + 1u, nO, v1);
                    for (var c = c0; c < c1; c++) {
                        let g = w[OFF(3u) + b * nO + c] * v; // binding 4 is dY here
                        let i1 = OFF(0u) + ix.x + c * ix.z; let i2 = OFF(0u) + ix.y + c * ix.z;
                        o[i1] = bitcast<u32>(bitcast<f32>(o[i1]) + g);
                        o[i2] = bitcast<u32>(bitcast<f32>(o[i2]) + g);
                    }
                }
            }
        }
    } else {
        for (var i = first(gid, nwg); i < B; i += stride(nwg)) {
            let s = u32(starts[OFF(4u) + i]); let len = u32(starts[OFF(4u) + i + 1u]) - s - 1u;
            var h = U(4u); let nb = len / 4u;
            for (var q = 0u; q < nb; q++) {
                let p = s + 4u * q;
                let k1 = byte_at(p) | (byte_at(p + 1u) << 8u) | (byte_at(p + 2u) << 16u) | (byte_at(p + 3u) << 24u);
                h ^= mix_k1(k1);
                h = rotl32(h, 13u) * 5u + 0xe6546b64u;
            }
            let t = s + 4u * nb; let rem = len & 3u;
            var k1 = 0u;
            if (rem == 3u) { k1 ^= byte_at(t + 2u) << 16u; }
            if (rem >= 2u) { k1 ^= byte_at(t + 1u) << 8u; }
            if (rem >= 1u) { k1 ^= byte_at(t); h ^= mix_k1(k1); }
            h ^= len;
            h = fmix32(h);
            o[OFF(0u) + 2u * i] = h;
            o[OFF(0u) + 2u * i + 1u] = select(0u, 0xFFFFFFFFu, (h >> 31u) != 0u);
        }
    }
}
