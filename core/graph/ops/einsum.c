/* ONNX Einsum (issue 23): the contractions exporters emit, mapped onto transposes (copy of a
 * permuted view) and batched GEMM. Supported: one operand whose output is a permutation of its
 * axes ("ij->ji"), or two operands where every letter is a batch axis (in both and the output), a
 * contracted axis (in both, not the output) or a free axis of one operand kept in the output —
 * "bij,bjk->bik", "bhid,bhjd->bhij", "ij,kj->ik", "i,j->ij"; an ellipsis stands for batch axes
 * ("...ij,...jk->...ik", equal extents). Repeated letters in one operand (diagonals) and axes summed
 * within one operand are refused at load, naming the equation. */
#include "ops.h"

typedef struct es {
    int n;                             /* operands */
    char t[2][LITHE_MAX_DIMS + 1], o[LITHE_MAX_DIMS + 1];
    int len[2], olen;
} es;

static bool es_parse(const char *eq, size_t n_in, es *e, char *why, size_t cap) {
    memset(e, 0, sizeof *e);
    int part = 0, k = 0;
    bool arrow = false;
    for (const char *p = eq; *p; p++) {
        char c = *p;
        if (c == ' ') continue;
        if (c == ',' && !arrow) {
            if (++part > 1) return snprintf(why, cap, "more than two operands"), false;
            k = 0;
            continue;
        }
        if (c == '-' && p[1] == '>' && !arrow) {
            arrow = true;
            p++;
            k = 0;
            continue;
        }
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return snprintf(why, cap, "character '%c'", c), false;
        char *dst = arrow ? e->o : e->t[part];
        if (k == LITHE_MAX_DIMS) return snprintf(why, cap, "more than %d axes in a term", LITHE_MAX_DIMS), false;
        for (int j = 0; j < k; j++)
            if (dst[j] == c) return snprintf(why, cap, "letter '%c' twice in one term", c), false;
        dst[k++] = c;
        if (arrow) e->olen = k;
        else e->len[part] = k;
    }
    e->n = part + 1;
    if ((size_t)e->n != n_in) return snprintf(why, cap, "%d terms for %zu inputs", e->n, n_in), false;
    if (!arrow) { /* implicit output: the letters seen once, in alphabetical order */
        for (int c = 'A'; c <= 'z'; c++) {
            int seen = 0;
            for (int t = 0; t < e->n; t++) seen += strchr(e->t[t], c) != NULL && c != 0;
            if (seen == 1 && e->olen < LITHE_MAX_DIMS) e->o[e->olen++] = (char)c;
        }
    }
    for (int j = 0; j < e->olen; j++) {
        bool found = false;
        for (int t = 0; t < e->n; t++) found = found || strchr(e->t[t], e->o[j]);
        if (!found) return snprintf(why, cap, "output letter '%c' is in no input", e->o[j]), false;
    }
    for (int t = 0; t < e->n; t++)
        for (int j = 0; j < e->len[t]; j++) {
            char c = e->t[t][j];
            bool other = e->n == 2 && strchr(e->t[1 - t], c);
            if (!other && !strchr(e->o, c)) return snprintf(why, cap, "letter '%c' is summed within one operand", c), false;
        }
    return true;
}

static bool is_letter(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* The equation with each "..." written out as letters the equation does not use, right-aligned
 * across the operands (numpy's rule) and leading the implicit output; ranks NULL (at load): each
 * "..." stands for no axis, so only the letters are checked. */
static bool es_expand(const char *eq, const int *ranks, size_t n_in, char *out, size_t cap, char *why, size_t wcap) {
    int term = 0, letters[3] = {0};
    bool ell[3] = {0}, arrow = false, used[128] = {0};
    for (const char *p = eq; *p; p++) {
        if (*p == ',' && !arrow && term < 1) term++;
        else if (*p == '-' && p[1] == '>' && !arrow) arrow = true, term = 2, p++;
        else if (*p == '.') {
            if (strncmp(p, "...", 3) || ell[term]) return snprintf(why, wcap, "a malformed or repeated ellipsis"), false;
            ell[term] = true;
            p += 2;
        } else if (is_letter((unsigned char)*p)) letters[term]++, used[(unsigned char)*p] = true;
    }
    int er[2] = {0, 0}, E = 0, n = 0;
    for (int t = 0; t < 2 && (size_t)t < n_in; t++)
        if (ell[t] && ranks) {
            er[t] = ranks[t] - letters[t];
            if (er[t] < 0) return snprintf(why, wcap, "term %d has more letters than its input's rank %d", t, ranks[t]), false;
            if (er[t] > E) E = er[t];
        }
    char pool[LITHE_MAX_DIMS + 1] = {0};
    for (int c = 'Z', k = 0; k < E && c >= 'A'; c--)
        if (!used[c]) pool[k++] = (char)c;
    if ((int)strlen(pool) < E) return snprintf(why, wcap, "too many axes"), false;
    term = 0;
    arrow = false;
    for (const char *p = eq; *p && n + LITHE_MAX_DIMS + 2 < (int)cap; p++) {
        if (*p == ',' && !arrow) term++;
        if (*p == '-' && p[1] == '>') arrow = true, term = 2;
        if (*p != '.') {
            out[n++] = *p;
            continue;
        }
        p += 2;
        const char *src = term == 2 ? pool : pool + (E - er[term]);
        for (int k = 0; src[k]; k++) out[n++] = src[k];
    }
    if (!arrow && (ell[0] || ell[1])) { /* the implicit output: the ellipsis' axes, then the letters seen once */
        out[n++] = '-', out[n++] = '>';
        for (int k = 0; k < E; k++) out[n++] = pool[k];
        for (int c = 'A'; c <= 'z' && n + 1 < (int)cap; c++) {
            int seen = 0;
            for (const char *p = eq; *p; p++) seen += *p == c;
            if (is_letter(c) && seen == 1) out[n++] = (char)c;
        }
    }
    out[n] = 0;
    return true;
}

bool lithe__einsum_supported(const char *eq, size_t n_in, char *why, size_t cap) {
    es e;
    char full[256];
    if (!es_expand(eq ? eq : "", NULL, n_in, full, sizeof full, why, cap)) return false;
    return es_parse(full, n_in, &e, why, cap);
}

/* A contiguous copy of X with its axes in order perm (a reshape when perm is the identity). */
static lithe_status permute(lithe__gexec *x, lithe_tensor *X, int nd, const int64_t *shape, const int *perm, lithe_tensor **out) {
    int64_t st[LITHE_MAX_DIMS] = {0}, ps[LITHE_MAX_DIMS], vst[LITHE_MAX_DIMS];
    bool ident = true;
    contiguous_strides(nd, shape, st);
    for (int d = 0; d < nd; d++) {
        ps[d] = shape[perm[d]];
        vst[d] = st[perm[d]];
        ident = ident && perm[d] == d;
    }
    if (ident) return lithe_tensor_reshape(X, nd, nd ? ps : NULL, out); /* nd 0: a scalar result */
    lithe_tensor *v = NULL;
    LITHE__TRY(view(X, nd, ps, vst, 0, &v));
    lithe_status s = new_f32(x, nd, ps, false, out);
    if (s == LITHE_OK) s = lithe__op_copy(x->be, *out, v);
    lithe_tensor_release(v);
    return s;
}

/* The plan of a two-operand contraction: each operand's axis order (batch, free, contracted for A;
 * batch, contracted, free for B), the product's letters (batch, A free, B free), the sizes. */
typedef struct eplan {
    int pa[LITHE_MAX_DIMS], pb[LITHE_MAX_DIMS], po[LITHE_MAX_DIMS], pi[LITHE_MAX_DIMS]; /* pi: inverse of po */
    int64_t cshape[LITHE_MAX_DIMS];
    int cnd;
    int64_t P, M, K, N;
} eplan;

static lithe_status plan_of(lithe__gexec *x, size_t node, const es *e, lithe_tensor **in, eplan *p) {
    const char *A = e->t[0], *B = e->n == 2 ? e->t[1] : "";
    char cl[LITHE_MAX_DIMS * 2 + 1] = {0};
    int64_t ext[128] = {0};
    memset(p, 0, sizeof *p);
    for (int t = 0; t < e->n; t++) {
        if (in[t]->ndim != e->len[t])
            return fail(x, node, LITHE_ERR_SHAPE, "term %d has %d letters for a rank-%d input", t, e->len[t], in[t]->ndim);
        for (int j = 0; j < e->len[t]; j++) {
            int c = (unsigned char)e->t[t][j];
            if (ext[c] && ext[c] != in[t]->shape[j] + 1)
                return fail(x, node, LITHE_ERR_SHAPE, "letter '%c' has extents %lld and %lld", c, (long long)ext[c] - 1,
                            (long long)in[t]->shape[j]);
            ext[c] = in[t]->shape[j] + 1;
        }
    }
    int na = 0, nb = 0, nc = 0;
    p->P = p->M = p->K = p->N = 1;
    if (e->n == 1) { /* a permutation */
        for (int j = 0; j < e->olen; j++) p->po[j] = (int)(strchr(A, e->o[j]) - A);
        return LITHE_OK;
    }
    for (int j = 0; j < e->olen; j++) /* batch letters, in output order */
        if (strchr(A, e->o[j]) && strchr(B, e->o[j])) {
            p->pa[na++] = (int)(strchr(A, e->o[j]) - A);
            p->pb[nb++] = (int)(strchr(B, e->o[j]) - B);
            cl[nc++] = e->o[j];
            p->P *= ext[(unsigned char)e->o[j]] - 1;
        }
    for (int j = 0; j < e->len[0]; j++) /* A's free letters */
        if (!strchr(B, A[j])) p->pa[na++] = j, cl[nc++] = A[j], p->M *= ext[(unsigned char)A[j]] - 1;
    for (int j = 0; j < e->len[0]; j++) /* contracted */
        if (strchr(B, A[j]) && !strchr(e->o, A[j])) {
            p->pa[na++] = j;
            p->pb[nb++] = (int)(strchr(B, A[j]) - B);
            p->K *= ext[(unsigned char)A[j]] - 1;
        }
    for (int j = 0; j < e->len[1]; j++) /* B's free letters */
        if (!strchr(A, B[j])) p->pb[nb++] = j, cl[nc++] = B[j], p->N *= ext[(unsigned char)B[j]] - 1;
    p->cnd = nc;
    for (int j = 0; j < nc; j++) p->cshape[j] = ext[(unsigned char)cl[j]] - 1;
    for (int j = 0; j < e->olen; j++) p->po[j] = (int)(strchr(cl, e->o[j]) - cl);
    for (int j = 0; j < e->olen; j++) p->pi[p->po[j]] = j;
    return LITHE_OK;
}

static lithe_status mat(lithe_tensor *T, int64_t p, int64_t r, int64_t c, lithe_tensor **out) {
    return view(T, 2, (int64_t[]){r, c}, (int64_t[]){c, 1}, p * r * c, out);
}

/* C[p] = beta C[p] + op(A[p]) op(B[p]) over P batches; A[p] (ar, ac), B[p] (br, bc), C[p] (cr, cc). */
static lithe_status bgemm(lithe__gexec *x, int64_t P, bool tA, bool tB, lithe_tensor *A, int64_t ar, int64_t ac,
                          lithe_tensor *B, int64_t br, int64_t bc, lithe_tensor *C, int64_t cr, int64_t cc) {
    lithe_status s = LITHE_OK;
    if (!cr || !cc) return LITHE_OK;
    if (!ac || !ar || !br || !bc) return lithe__op_fill(x->be, C, 0.0f); /* an empty contraction */
    for (int64_t q = 0; s == LITHE_OK && q < P; q++) {
        lithe_tensor *a = NULL, *b = NULL, *c = NULL;
        s = mat(A, q, ar, ac, &a);
        if (s == LITHE_OK) s = mat(B, q, br, bc, &b);
        if (s == LITHE_OK) s = mat(C, q, cr, cc, &c);
        if (s == LITHE_OK) s = lithe__op_gemm(x->be, tA, tB, 1.0f, a, b, 0.0f, c);
        lithe_tensor_release(a);
        lithe_tensor_release(b);
        lithe_tensor_release(c);
    }
    return s;
}

static lithe_status setup(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, es *e, eplan *p) {
    const lithe__onnx_attr *a = lithe__onnx_attr_get(NODE(x, node), "equation");
    char why[96], full[256];
    int ranks[2] = {0, 0};
    if (!a || !a->s) return fail(x, node, LITHE_ERR_FORMAT, "equation is required");
    for (size_t t = 0; t < n_in && t < 2; t++) ranks[t] = in[t] ? in[t]->ndim : 0;
    if (!es_expand(a->s, ranks, n_in, full, sizeof full, why, sizeof why) || !es_parse(full, n_in, e, why, sizeof why))
        return fail(x, node, LITHE_ERR_UNSUPPORTED, "equation '%s': %s (lithe runs transposes and batched matrix products)", a->s, why);
    LITHE__TRY(need_inputs(x, node, in, n_in, (size_t)e->n));
    for (int t = 0; t < e->n; t++) LITHE__TRY(need_float(x, node, in[t], (size_t)t));
    return plan_of(x, node, e, in, p);
}

FWD(f_einsum) {
    UNUSED_FWD;
    es e;
    eplan p;
    LITHE__TRY(setup(x, node, in, n_in, &e, &p));
    if (e.n == 1) return permute(x, in[0], in[0]->ndim, in[0]->shape, p.po, &out[0]);
    lithe_tensor *Ap = NULL, *Bp = NULL, *C = NULL;
    lithe_status s = permute(x, in[0], in[0]->ndim, in[0]->shape, p.pa, &Ap);
    if (s == LITHE_OK) s = permute(x, in[1], in[1]->ndim, in[1]->shape, p.pb, &Bp);
    if (s == LITHE_OK) s = new_f32(x, p.cnd ? p.cnd : 1, p.cnd ? p.cshape : (int64_t[]){1}, false, &C);
    if (s == LITHE_OK) s = bgemm(x, p.P, false, false, Ap, p.M, p.K, Bp, p.K, p.N, C, p.M, p.N);
    if (s == LITHE_OK) s = permute(x, C, p.cnd, p.cshape, p.po, &out[0]);
    lithe_tensor_release(Ap);
    lithe_tensor_release(Bp);
    lithe_tensor_release(C);
    return s;
}

/* dA = dC · Bᵀ, dB = Aᵀ · dC per batch, each put back in its operand's axis order. */
BWD(b_einsum) {
    UNUSED_BWD;
    es e;
    eplan p;
    lithe_tensor *dA = NULL, *dB = NULL;
    LITHE__TRY(setup(x, node, in, n_in, &e, &p));
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &dA));
    if (e.n == 2) LITHE__TRY(lithe__gexec_grad(x, node, 1, &dB));
    if (!dA && !dB) return LITHE_OK;
    lithe_tensor *dC = NULL, *Ap = NULL, *Bp = NULL, *G = NULL, *t = NULL;
    int inv[LITHE_MAX_DIMS];
    lithe_status s = LITHE_OK;
    if (e.n == 1) {
        for (int d = 0; d < e.olen; d++) inv[p.po[d]] = d;
        s = permute(x, dout[0], dout[0]->ndim, dout[0]->shape, inv, &t);
        if (s == LITHE_OK) s = acc(x, dA, t);
        lithe_tensor_release(t);
        return s;
    }
    s = permute(x, dout[0], dout[0]->ndim, dout[0]->shape, p.pi, &dC); /* into (batch, A free, B free) */
    if (s == LITHE_OK) s = permute(x, in[0], in[0]->ndim, in[0]->shape, p.pa, &Ap);
    if (s == LITHE_OK) s = permute(x, in[1], in[1]->ndim, in[1]->shape, p.pb, &Bp);
    for (int k = 0; k < 2 && s == LITHE_OK; k++) {
        lithe_tensor *d = k ? dB : dA, *X = in[k];
        if (!d) continue;
        const int *pp = k ? p.pb : p.pa;
        int64_t ps[LITHE_MAX_DIMS];
        for (int j = 0; j < X->ndim; j++) ps[j] = X->shape[pp[j]];
        s = new_f32(x, X->ndim ? X->ndim : 1, X->ndim ? ps : (int64_t[]){1}, false, &G);
        if (s == LITHE_OK && !k) s = bgemm(x, p.P, false, true, dC, p.M, p.N, Bp, p.K, p.N, G, p.M, p.K);
        if (s == LITHE_OK && k) s = bgemm(x, p.P, true, false, Ap, p.M, p.K, dC, p.M, p.N, G, p.K, p.N);
        for (int j = 0; j < X->ndim; j++) inv[pp[j]] = j;
        if (s == LITHE_OK) s = permute(x, G, X->ndim, ps, inv, &t);
        if (s == LITHE_OK) s = acc(x, d, t);
        lithe_tensor_release(G);
        lithe_tensor_release(t);
        G = t = NULL;
    }
    lithe_tensor_release(dC);
    lithe_tensor_release(Ap);
    lithe_tensor_release(Bp);
    return s;
}
