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

/* A JSON object's keys must be distinct: readers disagree on which of two equal keys wins
 * (Python's json and JavaScript's JSON.parse take the last, a first-match lookup the first), so one
 * file would be two models. n keys at tmp[0], tmp[2], ... (offsets into the doc's chars): sorted by
 * (length, bytes) when there are many (a hostile object cannot make this quadratic). */
typedef struct jkey {
    const char *s;
    size_t len;
} jkey;

static int jkey_cmp(const void *a, const void *b) {
    const jkey *x = a, *y = b;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return memcmp(x->s, y->s, x->len);
}

static lithe_status check_keys(jreader *r, const js_val *tmp, size_t n) {
    if (n < 2) return LITHE_OK;
    jkey small[16], *k = n <= 16 ? small : lithe__malloc(n * sizeof *k);
    if (!k) return lithe__oom(r->what, n * sizeof *k);
    for (size_t i = 0; i < n; i++) k[i] = (jkey){r->doc->chars + ((uintptr_t)tmp[2 * i].str - 1), tmp[2 * i].len};
    qsort(k, n, sizeof *k, jkey_cmp);
    const jkey *dup = NULL;
    for (size_t i = 1; i < n && !dup; i++)
        if (!jkey_cmp(&k[i - 1], &k[i])) dup = &k[i];
    lithe_status s = LITHE_OK;
    if (dup)
        s = lithe__fail(LITHE_ERR_FORMAT, "%s: malformed JSON at byte %zu of %zu: the key \"%.*s\" appears twice in one object",
                        r->what, r->at, r->n, (int)(dup->len < 80 ? dup->len : 80), dup->s);
    if (k != small) lithe__free(k);
    return s;
}


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
    if (s == LITHE_OK && obj) s = check_keys(r, tmp, n / 2);
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

/* ---- numbers: the nearest double to a decimal, correctly rounded (ties to even) ----
 * Own code rather than strtod: libc's works in long double, which WebAssembly keeps as 128-bit
 * software floats (14 KB of the npm module). Digits d (no leading zeros) times 10^e: exactly by
 * two exact doubles when they fit (Clinger's fast path), else with big integers: the value as
 * N = d * 10^e, or the quotient Q = d * 2^t / 10^-e with t bits to spare and a remainder flag,
 * rounded at the double's last bit (fewer bits for subnormals). */

enum { BIG_LIMBS = 96 }; /* 3072 bits: 10^724 (the smallest exponent kept) times 2^70 fits */
typedef struct big {
    uint32_t w[BIG_LIMBS];
    int n; /* limbs in use */
} big;

static void big_muladd(big *a, uint32_t m, uint32_t add) {
    uint64_t carry = add;
    for (int i = 0; i < a->n; i++) {
        carry += (uint64_t)a->w[i] * m;
        a->w[i] = (uint32_t)carry;
        carry >>= 32;
    }
    if (carry && a->n < BIG_LIMBS) a->w[a->n++] = (uint32_t)carry;
}
static int big_bits(const big *a) {
    int n = a->n;
    while (n && !a->w[n - 1]) n--;
    if (!n) return 0;
    int b = 32;
    while (!(a->w[n - 1] >> (b - 1))) b--;
    return (n - 1) * 32 + b;
}
static int big_bit(const big *a, int i) { return i / 32 < a->n ? (int)(a->w[i / 32] >> (i % 32)) & 1 : 0; }
static bool big_any_below(const big *a, int i) { /* any of bits [0, i) set */
    for (int k = 0; k < i / 32 && k < a->n; k++)
        if (a->w[k]) return true;
    return i % 32 && i / 32 < a->n && (a->w[i / 32] & ((1u << (i % 32)) - 1));
}
static int big_cmp(const big *a, const big *b) {
    for (int i = (a->n > b->n ? a->n : b->n) - 1; i >= 0; i--) {
        uint32_t x = i < a->n ? a->w[i] : 0, y = i < b->n ? b->w[i] : 0;
        if (x != y) return x < y ? -1 : 1;
    }
    return 0;
}

/* The nearest double to q * 2^scale, q's bits beyond the kept ones rounded with `sticky` (bits
 * below q that are not zero). */
static double big_round(const big *q, int scale, bool sticky) {
    int bits = big_bits(q);
    if (!bits) return 0.0;
    int e = bits - 1 + scale; /* q * 2^scale lies in [2^e, 2^(e+1)) */
    int keep = e >= -1022 ? 53 : 53 - (-1022 - e); /* subnormals keep fewer bits */
    int drop = bits - keep;
    uint64_t k = 0;
    for (int i = bits - 1; i >= (drop > 0 ? drop : 0); i--) k = k << 1 | (uint64_t)big_bit(q, i);
    if (drop > 0) {
        bool half = big_bit(q, drop - 1), below = sticky || big_any_below(q, drop - 1);
        if (half && (below || (k & 1))) k++;
        return ldexp((double)k, drop + scale);
    }
    return ldexp((double)k, scale);
}

double js_number(const char *s, size_t len) {
    size_t at = 0;
    bool neg = at < len && s[at] == '-';
    if (neg) at++;
    char dig[410];
    int n = 0;
    long e = 0; /* the value: dig[0..n) as an integer, times 10^e */
    bool frac = false;
    for (; at < len && ((s[at] >= '0' && s[at] <= '9') || s[at] == '.'); at++) {
        if (s[at] == '.') {
            frac = true;
            continue;
        }
        if (n == 0 && s[at] == '0') { /* a leading zero */
            if (frac) e--;
            continue;
        }
        if (n < (int)sizeof dig) dig[n++] = s[at];
        else if (!frac) e++; /* (JSON numbers here are at most 400 characters) */
        if (frac) e--;
    }
    if (at < len && (s[at] == 'e' || s[at] == 'E')) {
        at++;
        bool eneg = at < len && s[at] == '-';
        if (at < len && (s[at] == '-' || s[at] == '+')) at++;
        long x = 0;
        for (; at < len && s[at] >= '0' && s[at] <= '9'; at++)
            if (x < 100000) x = x * 10 + (s[at] - '0');
        e += eneg ? -x : x;
    }
    while (n && dig[n - 1] == '0') n--, e++; /* trailing zeros */
    double r;
    if (!n || n + e <= -324) r = 0.0; /* below half the smallest subnormal */
    else if (n + e > 310) r = HUGE_VAL;
    else if (n <= 15 && e >= -22 && e <= 22) { /* d < 2^53 and 10^|e| are exact doubles */
        double d = 0.0, p = 1.0;
        for (int i = 0; i < n; i++) d = d * 10.0 + (dig[i] - '0');
        for (long i = 0; i < (e < 0 ? -e : e); i++) p *= 10.0;
        r = e < 0 ? d / p : d * p;
    } else {
        big num, den, quo, rem;
        memset(&num, 0, sizeof num);
        for (int i = 0; i < n; i++) big_muladd(&num, 10, (uint32_t)(dig[i] - '0'));
        if (e >= 0) {
            for (long i = 0; i < e; i++) big_muladd(&num, 10, 0);
            r = big_round(&num, 0, false);
        } else {
            memset(&den, 0, sizeof den);
            den.w[0] = 1, den.n = 1;
            for (long i = 0; i < -e; i++) big_muladd(&den, 10, 0);
            int t = big_bits(&den) - big_bits(&num) + 66; /* the quotient gets >= 66 bits */
            if (t < 0) t = 0;
            int nb = big_bits(&num) + t; /* long division of num * 2^t by den, a bit at a time */
            memset(&quo, 0, sizeof quo);
            memset(&rem, 0, sizeof rem);
            quo.n = (nb + 31) / 32;
            for (int i = nb - 1; i >= 0; i--) {
                big_muladd(&rem, 2, (uint32_t)(i >= t ? big_bit(&num, i - t) : 0));
                if (big_cmp(&rem, &den) >= 0) {
                    uint64_t borrow = 0;
                    for (int k = 0; k < rem.n; k++) {
                        uint64_t y = (k < den.n ? den.w[k] : 0) + borrow;
                        borrow = rem.w[k] < y;
                        rem.w[k] = (uint32_t)(rem.w[k] - y);
                    }
                    quo.w[i / 32] |= 1u << (i % 32);
                }
            }
            r = big_round(&quo, -t, big_bits(&rem) != 0);
        }
    }
    return neg ? -r : r;
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
    v->num = js_number(buf, len);
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
