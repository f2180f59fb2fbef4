/* The .lithe file's compact weights (docs/format.md, "Compact weights"): F16 / BF16 params, and
 * I8 / U8 params whose decoding the metadata key lithe.quantization gives:
 *   {"<node>.<param>": {"axis": null | 0, "scale": "<tensor>", "zero_point": "<tensor>"}, ...}
 * scale an F32 tensor and zero_point an I32 tensor, each 1-D of length 1 (axis null) or the
 * param's extent along axis 0. Every scale finite and > 0, every zero point inside the param's
 * dtype range: checked at load, before the model exists. */
#include "../internal.h"
#include "lithe_file.h"

#include <stdio.h>
#include <string.h>

static const char *const WHAT = ".lithe";

void lithe__lf_quant_out(out_tensor *ts, size_t *nt, js_buf *q) {
    size_t n0 = *nt, k = *nt;
    bool first = true;
    js_raw(q, "{");
    for (size_t i = 0; i < n0; i++) {
        const lithe_tensor *t = ts[i].t;
        if (!t || (t->dtype != LITHE_I8 && t->dtype != LITHE_U8) || !t->storage->quant) continue;
        const lithe__quant *qq = t->storage->quant;
        out_tensor *sc = &ts[k++], *zp = &ts[k++];
        *sc = (out_tensor){.bytes = (const uint8_t *)qq->scale, .nbytes = (size_t)qq->n * 4, .typed = true, .bytes_dtype = LITHE_F32,
                           .bytes_numel = qq->n};
        *zp = (out_tensor){.bytes = (const uint8_t *)qq->zero, .nbytes = (size_t)qq->n * 4, .typed = true, .bytes_dtype = LITHE_I32,
                           .bytes_numel = qq->n};
        snprintf(sc->name, sizeof sc->name, "%s.scale", ts[i].name);
        snprintf(zp->name, sizeof zp->name, "%s.zero_point", ts[i].name);
        if (!first) js_raw(q, ",");
        first = false;
        js_str(q, ts[i].name);
        js_raw(q, qq->axis == 0 ? ":{\"axis\":0,\"scale\":" : ":{\"axis\":null,\"scale\":");
        js_str(q, sc->name);
        js_raw(q, ",\"zero_point\":");
        js_str(q, zp->name);
        js_raw(q, "}");
    }
    js_raw(q, "}");
    *nt = k;
}

const in_tensor *lithe__lf_find(const parsed *p, const char *name) {
    for (size_t i = 0; i < p->nt; i++)
        if (!strcmp(p->ts[i].name, name)) return &p->ts[i];
    return NULL;
}

static lithe_status bad(const char *name, const char *why) {
    return lithe__fail(LITHE_ERR_FORMAT, "%s: lithe.quantization entry '%s': %s", WHAT, name, why);
}

lithe_status lithe__lf_quant_parse(parsed *p, const js_val *meta_str) {
    p->quant.root.type = JS_NULL;
    if (!meta_str) return LITHE_OK;
    if (meta_str->type != JS_STR)
        return lithe__fail(LITHE_ERR_FORMAT, "%s: __metadata__'s lithe.quantization is not a string", WHAT);
    LITHE__TRY(js_parse(meta_str->str, meta_str->len, ".lithe quantization", &p->quant));
    const js_val *r = &p->quant.root;
    if (r->type != JS_OBJ) return lithe__fail(LITHE_ERR_FORMAT, "%s: lithe.quantization is not a JSON object", WHAT);
    for (size_t i = 0; i < r->len; i++) {
        const char *name = r->items[2 * i].str;
        const js_val *e = &r->items[2 * i + 1], *ax = js_get(e, "axis"), *sc = js_get(e, "scale"),
                     *zp = js_get(e, "zero_point");
        if (e->type != JS_OBJ || !ax || !sc || sc->type != JS_STR || !zp || zp->type != JS_STR)
            return bad(name, "needs axis, scale and zero_point (tensor names)");
        if (ax->type != JS_NULL && !(ax->type == JS_NUM && ax->is_int && ax->i == 0))
            return bad(name, "axis must be null (per tensor) or 0 (per row)");
        const in_tensor *t = lithe__lf_find(p, name);
        if (!t || (t->dtype != LITHE_I8 && t->dtype != LITHE_U8)) return bad(name, "names no I8 or U8 tensor of the file");
    }
    /* every I8 tensor is a quantized one (a U8 one may be bytes: optimizer.state, an ONNX graph) */
    for (size_t i = 0; i < p->nt; i++)
        if (p->ts[i].dtype == LITHE_I8 && !js_get(r, p->ts[i].name))
            return lithe__fail(LITHE_ERR_FORMAT, "%s: I8 tensor '%s' has no lithe.quantization entry (its scale)", WHAT,
                               p->ts[i].name);
    return LITHE_OK;
}

lithe_status lithe__lf_compact_param(const parsed *p, const lithe_model *m, const in_tensor *t, const char *tname,
                                     lithe_tensor *v) {
    if (!lithe__compact_ok(m) || strcmp(strrchr(tname, '.') + 1, "W") || t->ndim != 2)
        return lithe__fail(LITHE_ERR_DTYPE, "%s: param %s is %s; only the 2-D W of the dense layers (Linear, Relu, ..., "
                                            "Softmax) may be stored compact, other params are F32", WHAT, tname,
                           lithe_dtype_name(t->dtype));
    if (t->dtype == LITHE_F16 || t->dtype == LITHE_BF16) return LITHE_OK;
    const js_val *e = p->quant.root.type == JS_OBJ ? js_get(&p->quant.root, tname) : NULL;
    if (!e)
        return lithe__fail(LITHE_ERR_FORMAT, "%s: param %s is %s without a lithe.quantization entry (how it decodes)",
                           WHAT, tname, lithe_dtype_name(t->dtype));
    int axis = js_get(e, "axis")->type == JS_NULL ? -1 : 0;
    const in_tensor *sc = lithe__lf_find(p, js_get(e, "scale")->str), *zp = lithe__lf_find(p, js_get(e, "zero_point")->str);
    if (!sc || sc->dtype != LITHE_F32 || sc->ndim != 1)
        return bad(tname, "its scale names no 1-D F32 tensor of the file");
    if (!zp || zp->dtype != LITHE_I32 || zp->ndim != 1)
        return bad(tname, "its zero_point names no 1-D I32 tensor of the file");
    int64_t want = axis == 0 ? t->shape[0] : 1;
    if (sc->shape[0] != want || zp->shape[0] != want) {
        char why[160];
        snprintf(why, sizeof why, "%lld scales and %lld zero points for %s (needs %lld)", (long long)sc->shape[0],
                 (long long)zp->shape[0], axis == 0 ? "axis 0's extent" : "a per-tensor quantization", (long long)want);
        return lithe__fail(LITHE_ERR_SHAPE, "%s: lithe.quantization entry '%s': %s", WHAT, tname, why);
    }
    float *s = lithe__malloc((size_t)(want ? want : 1) * sizeof *s);
    int32_t *z = lithe__malloc((size_t)(want ? want : 1) * sizeof *z);
    lithe_status st = s && z ? LITHE_OK : lithe__oom(WHAT, (size_t)want * 8);
    if (st == LITHE_OK) {
        memcpy(s, sc->src, (size_t)want * 4); /* the file's bytes may be unaligned */
        memcpy(z, zp->src, (size_t)want * 4);
        st = lithe_tensor_set_quant_params(v, axis, want, s, z);
    }
    lithe__free(s);
    lithe__free(z);
    if (st != LITHE_OK && st != LITHE_ERR_OOM) {
        char why[384];
        snprintf(why, sizeof why, "%s", lithe_last_error());
        return lithe__fail(st, "%s: param %s: %s", WHAT, tname, why);
    }
    return st;
}
