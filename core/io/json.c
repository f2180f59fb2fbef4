/* JSON: see json.h. */
#include "json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JS_MAX_DEPTH 64

/* ---- writer ---- */

static void jput(js_buf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 256;
        while (nc < b->n + n + 1) nc *= 2;
        char *np = lithe__realloc(b->p, nc);
        if (!np) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

void js_raw(js_buf *b, const char *s) { jput(b, s, strlen(s)); }

void js_str(js_buf *b, const char *s) {
    jput(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            jput(b, esc, 2);
        } else if (*p < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            jput(b, esc, 6);
        } else {
            jput(b, (const char *)p, 1);
        }
    }
    jput(b, "\"", 1);
}

void js_int(js_buf *b, int64_t v) {
    char t[32];
    snprintf(t, sizeof t, "%lld", (long long)v);
    js_raw(b, t);
}

void js_double(js_buf *b, double v) {
    if (isnan(v)) return js_raw(b, "\"nan\"");
    if (isinf(v)) return js_raw(b, v > 0 ? "\"inf\"" : "\"-inf\"");
    char t[40];
    snprintf(t, sizeof t, "%.17g", v);
    /* keep it a float on reading: 1 -> 1.0 */
    if (!strpbrk(t, ".eE")) strcat(t, ".0");
    js_raw(b, t);
}

/* ---- reader ---- */

typedef struct jreader {
    const char *p;
    size_t n, at;
    const char *what;
    js_doc *doc;
} jreader;

static lithe_status jbad(jreader *r, const char *why) {
    return lithe__fail(LITHE_ERR_FORMAT, "%s: malformed JSON at byte %zu of %zu: %s", r->what, r->at, r->n, why);
}

static void ws(jreader *r) {
    while (r->at < r->n && (r->p[r->at] == ' ' || r->p[r->at] == '\t' || r->p[r->at] == '\n' || r->p[r->at] == '\r'))
        r->at++;
}

/* Values live in one array grown as needed; items are kept as offsets until the end (the array
 * may move). Each value needs at least one input byte, which bounds the total. */
static lithe_status new_vals(jreader *r, size_t k, size_t *base) {
    js_doc *d = r->doc;
    if (d->nvals + k > d->capvals) {
        size_t nc = d->capvals ? d->capvals : 64;
        while (nc < d->nvals + k) nc *= 2;
        js_val *nv = lithe__realloc(d->vals, nc * sizeof *nv);
        if (!nv) return lithe__oom(r->what, nc * sizeof *nv);
        d->vals = nv;
        d->capvals = nc;
    }
    *base = d->nvals;
    d->nvals += k;
    return LITHE_OK;
}

static lithe_status put_chars(jreader *r, const char *s, size_t n, size_t *off) {
    js_doc *d = r->doc;
    if (d->nchars + n + 1 > d->capchars) {
        size_t nc = d->capchars ? d->capchars : 256;
        while (nc < d->nchars + n + 1) nc *= 2;
        char *np = lithe__realloc(d->chars, nc);
        if (!np) return lithe__oom(r->what, nc);
        d->chars = np;
        d->capchars = nc;
    }
    *off = d->nchars;
    memcpy(d->chars + d->nchars, s, n);
    d->nchars += n;
    d->chars[d->nchars++] = '\0';
    return LITHE_OK;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool hex4(jreader *r, unsigned *out) {
    if (r->n - r->at < 4) return false;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(r->p[r->at + (size_t)i]);
        if (h < 0) return false;
        v = v << 4 | (unsigned)h;
    }
    r->at += 4;
    *out = v;
    return true;
}

static size_t utf8(unsigned cp, char *o) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xc0 | cp >> 6); o[1] = (char)(0x80 | (cp & 0x3f)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | cp >> 12); o[1] = (char)(0x80 | ((cp >> 6) & 0x3f)); o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | cp >> 18); o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f)); o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* A string: decoded into a scratch buffer (at most as long as the input span), then copied. */
static lithe_status parse_string(jreader *r, js_val *v) {
    r->at++; /* the opening quote */
    size_t start = r->at;
    while (r->at < r->n && r->p[r->at] != '"') r->at += r->p[r->at] == '\\' ? 2 : 1;
    if (r->at >= r->n) return jbad(r, "an unterminated string");
    size_t span = r->at - start;
    char *tmp = lithe__malloc(span + 1);
    if (!tmp) return lithe__oom(r->what, span);
    size_t k = 0;
    r->at = start;
    lithe_status s = LITHE_OK;
    while (s == LITHE_OK && r->p[r->at] != '"') {
        unsigned char c = (unsigned char)r->p[r->at++];
        if (c < 0x20) {
            s = jbad(r, "a control character in a string");
        } else if (c != '\\') {
            tmp[k++] = (char)c;
        } else {
            char e = r->p[r->at++];
            unsigned cp;
            switch (e) {
            case '"': tmp[k++] = '"'; break;
            case '\\': tmp[k++] = '\\'; break;
            case '/': tmp[k++] = '/'; break;
            case 'b': tmp[k++] = '\b'; break;
            case 'f': tmp[k++] = '\f'; break;
            case 'n': tmp[k++] = '\n'; break;
            case 'r': tmp[k++] = '\r'; break;
            case 't': tmp[k++] = '\t'; break;
            case 'u':
                if (!hex4(r, &cp)) {
                    s = jbad(r, "a bad \\u escape");
                    break;
                }
                if (cp >= 0xd800 && cp < 0xdc00) {
                    unsigned lo;
                    if (r->n - r->at < 6 || r->p[r->at] != '\\' || r->p[r->at + 1] != 'u' ||
                        (r->at += 2, !hex4(r, &lo)) || lo < 0xdc00 || lo >= 0xe000) {
                        s = jbad(r, "an unpaired surrogate");
                        break;
                    }
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                } else if (cp >= 0xdc00 && cp < 0xe000) {
                    s = jbad(r, "an unpaired surrogate");
                    break;
                }
                /* an escape of 6 (or 12) input bytes gives at most 4 output bytes */
                k += utf8(cp, tmp + k);
                break;
            default: s = jbad(r, "an unknown escape");
            }
        }
    }
    size_t off = 0;
    if (s == LITHE_OK) s = put_chars(r, tmp, k, &off);
    lithe__free(tmp);
    if (s != LITHE_OK) return s;
    r->at++; /* the closing quote */
    v->type = JS_STR;
    v->str = (const char *)(uintptr_t)(off + 1); /* an offset until the end */
    v->len = k;
    return LITHE_OK;
}

static lithe_status parse_value(jreader *r, js_val *v, int depth);

static lithe_status parse_container(jreader *r, js_val *v, int depth, bool obj) {
    if (depth >= JS_MAX_DEPTH) return jbad(r, "nested deeper than 64 levels");
    r->at++;
    /* collect into a temporary list, then copy into the value array in one block */
    size_t cap = 8, n = 0;
    js_val *tmp = lithe__malloc(cap * sizeof *tmp);
    if (!tmp) return lithe__oom(r->what, cap * sizeof *tmp);
    lithe_status s = LITHE_OK;
    ws(r);
    if (r->at < r->n && r->p[r->at] == (obj ? '}' : ']')) {
        r->at++;
    } else {
        for (;;) {
            if (n + 2 > cap) {
                cap *= 2;
                js_val *nt = lithe__realloc(tmp, cap * sizeof *nt);
                if (!nt) {
                    s = lithe__oom(r->what, cap * sizeof *nt);
                    break;
                }
                tmp = nt;
            }
            ws(r);
            if (obj) {
                if (r->at >= r->n || r->p[r->at] != '"') {
                    s = jbad(r, "an object key must be a string");
                    break;
                }
                if ((s = parse_string(r, &tmp[n++])) != LITHE_OK) break;
                ws(r);
                if (r->at >= r->n || r->p[r->at] != ':') {
                    s = jbad(r, "a ':' is missing");
                    break;
                }
                r->at++;
            }
            if ((s = parse_value(r, &tmp[n++], depth + 1)) != LITHE_OK) break;
            ws(r);
            if (r->at < r->n && r->p[r->at] == ',') {
                r->at++;
                continue;
            }
            if (r->at < r->n && r->p[r->at] == (obj ? '}' : ']')) {
                r->at++;
                break;
            }
            s = jbad(r, "a ',' or a closing bracket is missing");
            break;
        }
    }
    size_t base = 0;
    if (s == LITHE_OK && n) s = new_vals(r, n, &base);
    if (s == LITHE_OK) {
        if (n) memcpy(r->doc->vals + base, tmp, n * sizeof *tmp);
        v->type = obj ? JS_OBJ : JS_ARR;
        v->len = obj ? n / 2 : n;
        v->items = n ? (js_val *)(uintptr_t)(base + 1) : NULL;
    }
    lithe__free(tmp);
    return s;
}

static lithe_status parse_number(jreader *r, js_val *v) {
    size_t start = r->at;
    bool integral = true;
    if (r->p[r->at] == '-') r->at++;
    if (r->at >= r->n || r->p[r->at] < '0' || r->p[r->at] > '9') return jbad(r, "a bad number");
    if (r->p[r->at] == '0') r->at++;
    else while (r->at < r->n && r->p[r->at] >= '0' && r->p[r->at] <= '9') r->at++;
    if (r->at < r->n && r->p[r->at] == '.') {
        integral = false;
        r->at++;
        if (r->at >= r->n || r->p[r->at] < '0' || r->p[r->at] > '9') return jbad(r, "a bad fraction");
        while (r->at < r->n && r->p[r->at] >= '0' && r->p[r->at] <= '9') r->at++;
    }
    if (r->at < r->n && (r->p[r->at] == 'e' || r->p[r->at] == 'E')) {
        integral = false;
        r->at++;
        if (r->at < r->n && (r->p[r->at] == '+' || r->p[r->at] == '-')) r->at++;
        if (r->at >= r->n || r->p[r->at] < '0' || r->p[r->at] > '9') return jbad(r, "a bad exponent");
        while (r->at < r->n && r->p[r->at] >= '0' && r->p[r->at] <= '9') r->at++;
    }
    size_t len = r->at - start;
    if (len > 400) return jbad(r, "a number longer than 400 characters");
    char buf[408];
    memcpy(buf, r->p + start, len);
    buf[len] = '\0';
    v->type = JS_NUM;
    v->num = strtod(buf, NULL);
    if (!isfinite(v->num)) return jbad(r, "a number out of range");
    if (integral && len <= 19) {
        char *end;
        long long ll = strtoll(buf, &end, 10);
        if (*end == '\0' && (double)ll == v->num) {
            v->is_int = true;
            v->i = ll;
        }
    }
    return LITHE_OK;
}

static lithe_status parse_value(jreader *r, js_val *v, int depth) {
    memset(v, 0, sizeof *v);
    ws(r);
    if (r->at >= r->n) return jbad(r, "a value is missing");
    char c = r->p[r->at];
    if (c == '{') return parse_container(r, v, depth, true);
    if (c == '[') return parse_container(r, v, depth, false);
    if (c == '"') return parse_string(r, v);
    if (c == '-' || (c >= '0' && c <= '9')) return parse_number(r, v);
    static const struct {
        const char *w;
        js_type t;
        bool b;
    } words[] = {{"true", JS_BOOL, true}, {"false", JS_BOOL, false}, {"null", JS_NULL, false}};
    for (int i = 0; i < 3; i++) {
        size_t k = strlen(words[i].w);
        if (r->n - r->at >= k && !memcmp(r->p + r->at, words[i].w, k)) {
            r->at += k;
            v->type = words[i].t;
            v->b = words[i].b;
            return LITHE_OK;
        }
    }
    return jbad(r, "an unexpected character");
}

static void jfix(js_doc *d, js_val *v) {
    if (v->type == JS_STR) v->str = d->chars + ((uintptr_t)v->str - 1);
    if ((v->type == JS_ARR || v->type == JS_OBJ) && v->items) v->items = d->vals + ((uintptr_t)v->items - 1);
}

lithe_status js_parse(const char *text, size_t len, const char *what, js_doc *doc) {
    memset(doc, 0, sizeof *doc);
    jreader r = {text, len, 0, what, doc};
    lithe_status s = parse_value(&r, &doc->root, 0);
    if (s == LITHE_OK) {
        ws(&r);
        if (r.at != len) s = jbad(&r, "trailing characters");
    }
    if (s != LITHE_OK) {
        js_doc_free(doc);
        return s;
    }
    jfix(doc, &doc->root);
    for (size_t i = 0; i < doc->nvals; i++) jfix(doc, &doc->vals[i]);
    return LITHE_OK;
}

void js_doc_free(js_doc *doc) {
    lithe__free(doc->vals);
    lithe__free(doc->chars);
    memset(doc, 0, sizeof *doc);
}

const js_val *js_get(const js_val *obj, const char *key) {
    if (!obj || obj->type != JS_OBJ) return NULL;
    size_t k = strlen(key);
    for (size_t i = 0; i < obj->len; i++)
        if (obj->items[2 * i].len == k && !memcmp(obj->items[2 * i].str, key, k)) return &obj->items[2 * i + 1];
    return NULL;
}
