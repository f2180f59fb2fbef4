/* lithe train-tagger: the sequence demo. A spaCy-style tagger — lists of token ids through
 * list2ragged >> with_array(HashEmbed) >> expand_window >> with_array(Maxout) >> expand_window >>
 * with_array(Maxout) >> with_array(Softmax) >> ragged2list — learns to restore capitalisation:
 * it sees each token lowercased and tags it lower / Title / UPPER / other (digits, punctuation,
 * mixed case). Sentence starts, "GNU", "Program" after "the" are learned from the window, not the
 * token. The text is the licence texts every Debian system ships in /usr/share/common-licenses:
 * paragraphs split into sequences of at most 48 tokens, every 10th paragraph held out. */
#define _DEFAULT_SOURCE
#include "lithe.h"
#include "cli.h"
#include "tagger.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DEFAULT_TEXT_DIR "/usr/share/common-licenses"
#define MAX_SEQ 48
enum { TAG_LOWER, TAG_TITLE, TAG_UPPER, TAG_OTHER, N_TAGS };
static const char *const tag_names[N_TAGS] = {"lower", "Title", "UPPER", "other"};

typedef struct corpus {
    size_t n;          /* sequences */
    int32_t *len;      /* tokens per sequence */
    size_t *start;     /* first token of each sequence */
    uint64_t *key;     /* per token: FNV-1a 64 of the lowercased token */
    int32_t *tag;      /* per token */
    bool *held_out;    /* per sequence */
    size_t n_tok, cap_tok, cap_seq;
} corpus;

static int fail(const char *what, lithe_status s) {
    fprintf(stderr, "lithe: %s: %s: %s\n", what, lithe_status_str(s), lithe_last_error());
    return 1;
}

static bool is_word_byte(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80; }

static int tag_of(const unsigned char *t, size_t n) {
    size_t letters = 0, upper = 0;
    for (size_t i = 0; i < n; i++) {
        if ((t[i] >= 'a' && t[i] <= 'z') || (t[i] >= 'A' && t[i] <= 'Z')) letters++;
        if (t[i] >= 'A' && t[i] <= 'Z') upper++;
    }
    if (!letters || letters != n) return TAG_OTHER; /* digits, punctuation, non-ASCII, mixed letters+digits */
    if (upper == 0) return TAG_LOWER;
    if (upper == n && n >= 2) return TAG_UPPER;
    if (upper == 1 && t[0] >= 'A' && t[0] <= 'Z') return TAG_TITLE;
    return n == 1 ? TAG_UPPER : TAG_OTHER; /* "I", "A": one capital; "GmbH": mixed */
}

static uint64_t key_of(const unsigned char *t, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = t[i] >= 'A' && t[i] <= 'Z' ? (unsigned char)(t[i] + 32) : t[i];
        h = (h ^ c) * 0x100000001b3ull;
    }
    return h;
}

static bool grow(corpus *c, size_t tokens, size_t seqs) {
    if (c->n_tok + tokens > c->cap_tok) {
        size_t cap = (c->cap_tok + tokens) * 2;
        uint64_t *k = realloc(c->key, cap * sizeof *k);
        if (!k) return false;
        c->key = k;
        int32_t *t = realloc(c->tag, cap * sizeof *t);
        if (!t) return false;
        c->tag = t;
        c->cap_tok = cap;
    }
    if (c->n + seqs > c->cap_seq) {
        size_t cap = (c->cap_seq + seqs) * 2;
        int32_t *l = realloc(c->len, cap * sizeof *l);
        if (!l) return false;
        c->len = l;
        size_t *s = realloc(c->start, cap * sizeof *s);
        if (!s) return false;
        c->start = s;
        bool *h = realloc(c->held_out, cap * sizeof *h);
        if (!h) return false;
        c->held_out = h;
        c->cap_seq = cap;
    }
    return true;
}

/* Tokens of one file; a blank line or MAX_SEQ tokens end a sequence. */
static bool add_text(corpus *c, const unsigned char *text, size_t len, size_t *paragraph) {
    size_t i = 0;
    bool open = false;
    while (i < len) {
        if (text[i] == '\n') { /* a blank line ends the paragraph */
            size_t j = i + 1;
            while (j < len && (text[j] == ' ' || text[j] == '\t' || text[j] == '\r')) j++;
            if (j < len && text[j] == '\n' && open) {
                open = false;
                (*paragraph)++;
            }
            i++;
            continue;
        }
        if (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\f') {
            i++;
            continue;
        }
        size_t j = i + 1;
        if (is_word_byte(text[i]))
            while (j < len && (is_word_byte(text[j]) || (text[j] == '\'' && j + 1 < len && is_word_byte(text[j + 1])))) j++;
        if (!grow(c, 1, 1)) return false;
        if (!open || c->len[c->n - 1] == MAX_SEQ) {
            c->start[c->n] = c->n_tok;
            c->len[c->n] = 0;
            c->held_out[c->n] = *paragraph % 10 == 0;
            c->n++;
            open = true;
        }
        c->key[c->n_tok] = key_of(text + i, j - i);
        c->tag[c->n_tok] = tag_of(text + i, j - i);
        c->n_tok++;
        c->len[c->n - 1]++;
        i = j;
    }
    if (open) (*paragraph)++;
    return true;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every regular file of dir (symlinks skipped: Debian links GPL -> GPL-3), in name order. */
static int load_corpus(const char *dir, corpus *c) {
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "lithe: cannot read the text folder %s: %s (Debian's base-files ships %s)\n", dir,
                strerror(errno), DEFAULT_TEXT_DIR);
        return 1;
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char **more = realloc(names, (n + 1) * sizeof *names);
        if (!more) break;
        names = more;
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    size_t paragraph = 0, files = 0;
    int rc = 0;
    for (size_t f = 0; f < n && rc == 0; f++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[f]);
        struct stat st;
        if (!names[f] || lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (64 << 20)) continue;
        FILE *fp = fopen(path, "rb");
        if (!fp) continue;
        unsigned char *buf = malloc((size_t)st.st_size + 1);
        size_t got = buf ? fread(buf, 1, (size_t)st.st_size, fp) : 0;
        fclose(fp);
        if (buf && !add_text(c, buf, got, &paragraph)) {
            fprintf(stderr, "lithe: out of memory reading %s\n", path);
            rc = 1;
        }
        free(buf);
        files++;
    }
    for (size_t f = 0; f < n; f++) free(names[f]);
    free(names);
    if (rc == 0 && c->n_tok == 0) {
        fprintf(stderr, "lithe: no text found in %s\n", dir);
        rc = 1;
    }
    if (rc == 0) printf("text: %zu files, %zu tokens in %zu sequences, from %s\n", files, c->n_tok, c->n, dir);
    return rc;
}

static void corpus_free(corpus *c) {
    free(c->len);
    free(c->start);
    free(c->key);
    free(c->tag);
    free(c->held_out);
}

/* A LIST value of the sequences idx[0..n) as uint64 key tensors, and their tags as int32. */
static lithe_status batch(const corpus *c, const size_t *idx, size_t n, lithe_value **X, lithe_tensor **tags) {
    lithe_value **items = calloc(n ? n : 1, sizeof *items);
    lithe_status s = items ? LITHE_OK : LITHE_ERR_OOM;
    for (size_t i = 0; s == LITHE_OK && i < n; i++) {
        size_t at = c->start[idx[i]];
        int64_t len = c->len[idx[i]];
        lithe_tensor *k = NULL;
        s = lithe_tensor_from_data(LITHE_U64, 1, &len, c->key + at, &k);
        if (s == LITHE_OK) s = lithe_value_tensor(k, &items[i]);
        if (s == LITHE_OK && tags) s = lithe_tensor_from_data(LITHE_I32, 1, &len, c->tag + at, &tags[i]);
        lithe_tensor_release(k);
    }
    if (s == LITHE_OK) s = lithe_value_list(n, items, X);
    for (size_t i = 0; items && i < n; i++) lithe_value_release(items[i]);
    free(items);
    return s;
}

static lithe_status build_tagger(uint64_t seed, lithe_model **out) {
    lithe_model *he = NULL, *m1 = NULL, *m2 = NULL, *sm = NULL, *layers[8] = {NULL};
    lithe_status s = lithe_list2ragged(&layers[0]);
    if (s == LITHE_OK) s = lithe_hash_embed(&(lithe_embed_opts){.nO = 64, .nV = 4000, .has_seed = true, .seed = (uint32_t)seed}, &he);
    if (s == LITHE_OK) s = lithe_with_array(he, 0, &layers[1]);
    if (s == LITHE_OK) s = lithe_expand_window(1, &layers[2]);
    if (s == LITHE_OK) s = lithe_dense("Maxout.v1", &(lithe_dense_opts){.nO = 64, .nP = 3, .normalize = true, .dropout = 0.1f}, &m1);
    if (s == LITHE_OK) s = lithe_with_array(m1, 0, &layers[3]);
    if (s == LITHE_OK) s = lithe_expand_window(1, &layers[4]);
    if (s == LITHE_OK) s = lithe_dense("Maxout.v1", &(lithe_dense_opts){.nO = 64, .nP = 3, .normalize = true, .dropout = 0.1f}, &m2);
    if (s == LITHE_OK) s = lithe_with_array(m2, 0, &layers[5]);
    if (s == LITHE_OK) s = lithe_softmax(&(lithe_softmax_opts){.nO = N_TAGS}, &sm);
    if (s == LITHE_OK) s = lithe_with_array(sm, 0, &layers[6]);
    if (s == LITHE_OK) s = lithe_ragged2list(&layers[7]);
    if (s == LITHE_OK) return lithe_chain(8, layers, out);
    for (int i = 0; i < 8; i++) lithe_model_free(layers[i]);
    return s;
}

/* Accuracy over the held-out (or training) sequences: all tokens, and word tokens only
 * (tokens with letters, where the case is the question), and per-tag counts. */
static lithe_status evaluate(lithe_model *m, const corpus *c, bool held_out, double *acc_all, double *acc_words) {
    size_t *idx = malloc(c->n * sizeof *idx), n = 0;
    if (!idx) return LITHE_ERR_OOM;
    for (size_t i = 0; i < c->n; i++)
        if (c->held_out[i] == held_out) idx[n++] = i;
    size_t right = 0, total = 0, wright = 0, wtotal = 0;
    lithe_status s = LITHE_OK;
    for (size_t b = 0; s == LITHE_OK && b < n; b += 64) {
        size_t k = n - b < 64 ? n - b : 64;
        lithe_value *X = NULL, *Y = NULL;
        s = batch(c, idx + b, k, &X, NULL);
        if (s == LITHE_OK) s = lithe_model_predict(m, X, &Y);
        for (size_t i = 0; s == LITHE_OK && i < k; i++) {
            lithe_tensor *P = lithe_value_get_tensor(lithe_value_item(Y, i));
            int32_t L = c->len[idx[b + i]];
            float p[MAX_SEQ * N_TAGS];
            s = lithe_tensor_read(P, p, (size_t)L * N_TAGS * sizeof(float));
            for (int32_t t = 0; s == LITHE_OK && t < L; t++) {
                int best = 0;
                for (int j = 1; j < N_TAGS; j++)
                    if (p[t * N_TAGS + j] > p[t * N_TAGS + best]) best = j;
                int32_t gold = c->tag[c->start[idx[b + i]] + t];
                right += best == gold;
                total++;
                if (gold != TAG_OTHER) {
                    wright += best == gold;
                    wtotal++;
                }
            }
        }
        lithe_value_release(X);
        lithe_value_release(Y);
    }
    free(idx);
    *acc_all = total ? (double)right / (double)total : 0.0;
    *acc_words = wtotal ? (double)wright / (double)wtotal : 0.0;
    return s;
}

static void tagger_usage(FILE *f) {
    fprintf(f, "usage: lithe train-tagger [OPTIONS]\n"
               "  restores capitalisation: tags each lowercased token lower / Title / UPPER / other, from\n"
               "  the licence texts in --data (default " DEFAULT_TEXT_DIR ", Debian's base-files);\n"
               "  prints held-out accuracy per epoch (progress within an epoch on stderr)\n"
               "\n"
               "options:\n"
               "  --epochs N        passes over the training sequences (default 6)\n"
               "  --batch-size N    sequences per update, 1 to 64 (default 16)\n"
               "  --seed N          seed for initialization, dropout and shuffling (default 0)\n"
               "  --learn-rate X    Adam learning rate (default 0.002)\n"
               "  --data DIR        the folder of text files (default " DEFAULT_TEXT_DIR ")\n"
               "  --save PATH       write the trained tagger (averaged weights) as a .lithe file\n"
               "  --device NAME     cpu (default), vulkan, cuda, ...\n"
               "  -h, --help        this text\n"
               "\n" CLI_EXIT_HELP);
}

typedef struct tagger_opts {
    int epochs, batch_size;
    uint64_t seed;
    double lr;
    const char *dir, *save, *device;
} tagger_opts;

/* Fills o from the arguments; returns -1 to go on, else the exit status (--help, a usage error). */
static int parse_args(int argc, char **argv, tagger_opts *o) {
    static const struct option opts[] = {
        {"epochs", required_argument, NULL, 'e'}, {"batch-size", required_argument, NULL, 'b'},
        {"seed", required_argument, NULL, 's'},   {"learn-rate", required_argument, NULL, 'r'},
        {"data", required_argument, NULL, 'D'},   {"save", required_argument, NULL, 'o'},
        {"device", required_argument, NULL, 'd'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *cmd = "train-tagger";
    int ch, bad = 0;
    long n;
    cli_begin();
    while (!bad && (ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (ch) {
        case 'h': tagger_usage(stdout); return CLI_OK;
        case 'e': bad = cli_long(cmd, "epochs", optarg, 0, 100000, &n); o->epochs = (int)n; break;
        case 'b': bad = cli_long(cmd, "batch-size", optarg, 1, 64, &n); o->batch_size = (int)n; break;
        case 's': bad = cli_u64(cmd, "seed", optarg, &o->seed); break;
        case 'r': bad = cli_double(cmd, "learn-rate", optarg, 1e-12, 1e6, &o->lr); break;
        case 'D': o->dir = optarg; break;
        case 'o': o->save = optarg; break;
        case 'd': o->device = optarg; break;
        default: return cli_bad_option(cmd, argv, ch);
        }
    }
    if (bad) return CLI_USAGE;
    if (optind < argc) return cli_usage_error(cmd, "unexpected argument %s", argv[optind]);
    return -1;
}

int lithe_cmd_train_tagger(int argc, char **argv) {
    tagger_opts o = {.epochs = 6, .batch_size = 16, .seed = 0, .lr = 0.002, .dir = DEFAULT_TEXT_DIR, .device = "cpu"};
    int parsed = parse_args(argc, argv, &o);
    if (parsed >= 0) return parsed;
    const int epochs = o.epochs, batch_size = o.batch_size;
    const unsigned long long seed = o.seed;
    const double lr = o.lr;
    const char *dir = o.dir, *save = o.save, *device = o.device;
    lithe_backend *be = NULL;
    lithe_status s = lithe_backend_get(device, &be);
    if (s != LITHE_OK) return fail("--device", s);
    corpus c = {0};
    if (load_corpus(dir, &c) != 0) {
        corpus_free(&c);
        return 1;
    }
    size_t *train = malloc(c.n * sizeof *train), n_train = 0;
    float *u = malloc(c.n * sizeof *u);
    lithe_tensor **tags = calloc((size_t)batch_size, sizeof *tags), **d = calloc((size_t)batch_size, sizeof *d);
    lithe_model *model = NULL;
    lithe_optimizer *opt = NULL;
    int rc = 1;
    if (!train || !u || !tags || !d) {
        fprintf(stderr, "lithe: out of memory\n");
        goto done;
    }
    size_t counts[N_TAGS] = {0}, words = 0;
    for (size_t i = 0; i < c.n; i++)
        if (!c.held_out[i]) {
            train[n_train++] = i;
            for (int32_t t = 0; t < c.len[i]; t++) counts[c.tag[c.start[i] + t]]++;
        }
    for (int t = 0; t < TAG_OTHER; t++) words += counts[t];
    printf("train: %zu sequences; tags lower %zu, Title %zu, UPPER %zu, other %zu (majority baseline on words: %.4f)\n",
           n_train, counts[TAG_LOWER], counts[TAG_TITLE], counts[TAG_UPPER], counts[TAG_OTHER],
           words ? (double)counts[TAG_LOWER] / (double)words : 0.0);
    if ((s = build_tagger(seed, &model)) != LITHE_OK) { fail("building the tagger", s); goto done; }
    if ((s = lithe_model_set_seed(model, seed)) != LITHE_OK) { fail("seeding the model", s); goto done; }
    if ((s = lithe_model_set_backend(model, be)) != LITHE_OK) { fail("moving the model", s); goto done; }
    {
        lithe_value *X = NULL;
        s = batch(&c, train, n_train < 8 ? n_train : 8, &X, NULL);
        if (s == LITHE_OK) s = lithe_model_initialize(model, X, NULL);
        lithe_value_release(X);
        if (s != LITHE_OK) { fail("initializing the tagger", s); goto done; }
    }
    lithe_optimizer_opts oo = lithe_adam_defaults();
    oo.learn_rate = lr;
    if ((s = lithe_optimizer_new(&oo, &opt)) != LITHE_OK) { fail("creating the optimizer", s); goto done; }
    printf("model %s on %s, Adam(learn_rate=%g), %d sequences per batch, seed %llu\n", lithe_model_name(model),
           lithe_backend_name(be), lr, batch_size, seed);
    lithe_rng shuffle = {seed ^ 0x544147ull /* "TAG" */, 0};
    double total = 0.0, acc = 0.0, wacc = 0.0;
    for (int epoch = 1; epoch <= epochs; epoch++) {
        lithe_rng_uniform(&shuffle, u, n_train);
        for (size_t i = n_train; i-- > 1;) {
            size_t j = (size_t)(u[i] * (float)(i + 1));
            if (j > i) j = i;
            size_t t = train[i];
            train[i] = train[j];
            train[j] = t;
        }
        double t0 = cli_now(), loss_sum = 0.0;
        size_t tokens = 0;
        char label[32], extra[48];
        snprintf(label, sizeof label, "epoch %d", epoch);
        cli_progress progress;
        cli_progress_start(&progress, label, (int64_t)n_train, "sequences");
        for (size_t b = 0; b < n_train; b += (size_t)batch_size) {
            size_t k = n_train - b < (size_t)batch_size ? n_train - b : (size_t)batch_size;
            lithe_value *X = NULL, *Y = NULL, *dY = NULL;
            lithe_backprop *bp = NULL;
            const lithe_tensor *guesses[64];
            float loss = 0.0f;
            s = batch(&c, train + b, k, &X, tags);
            if (s == LITHE_OK) s = lithe_model_begin_update(model, X, &Y, &bp);
            for (size_t i = 0; s == LITHE_OK && i < k; i++) guesses[i] = lithe_value_get_tensor(lithe_value_item(Y, i));
            if (s == LITHE_OK)
                s = lithe_sequence_categorical_crossentropy(NULL, k, guesses, (const lithe_tensor *const *)tags, d, &loss);
            if (s == LITHE_OK) {
                lithe_value *items[64] = {NULL};
                for (size_t i = 0; s == LITHE_OK && i < k; i++) s = lithe_value_tensor(d[i], &items[i]);
                if (s == LITHE_OK) s = lithe_value_list(k, items, &dY);
                for (size_t i = 0; i < k; i++) lithe_value_release(items[i]);
            }
            if (s == LITHE_OK) s = lithe_backprop_run(bp, dY, NULL);
            if (s == LITHE_OK) s = lithe_model_finish_update(model, opt);
            for (size_t i = 0; i < k; i++) {
                tokens += (size_t)c.len[train[b + i]];
                lithe_tensor_release(tags[i]);
                lithe_tensor_release(d[i]);
                tags[i] = d[i] = NULL;
            }
            loss_sum += loss;
            lithe_backprop_free(bp);
            lithe_value_release(X);
            lithe_value_release(Y);
            lithe_value_release(dY);
            if (s != LITHE_OK) { cli_progress_end(&progress); fail("training step", s); goto done; }
            snprintf(extra, sizeof extra, "loss %.4f", loss_sum);
            cli_progress_update(&progress, (int64_t)(b + k), extra);
        }
        cli_progress_end(&progress);
        double dt = cli_now() - t0;
        total += dt;
        if ((s = lithe_optimizer_swap_averages(opt, model)) != LITHE_OK) { fail("swapping in averages", s); goto done; }
        s = evaluate(model, &c, true, &acc, &wacc);
        lithe_status s2 = lithe_optimizer_swap_averages(opt, model);
        if (s != LITHE_OK || s2 != LITHE_OK) { fail("evaluating", s != LITHE_OK ? s : s2); goto done; }
        printf("epoch %2d  loss %.4f  held-out accuracy %.4f (words %.4f)  %.1f s  %.0f tokens/s\n", epoch, loss_sum,
               acc, wacc, dt, (double)tokens / dt);
        fflush(stdout);
    }
    printf("held-out accuracy: %.4f, on words: %.4f (tags %s/%s/%s/%s; %d epochs, %.1f s training)\n", acc, wacc,
           tag_names[0], tag_names[1], tag_names[2], tag_names[3], epochs, total);
    if (save) {
        if ((s = lithe_optimizer_swap_averages(opt, model)) == LITHE_OK) {
            s = lithe_model_save(model, NULL, save);
            lithe_status s2 = lithe_optimizer_swap_averages(opt, model);
            if (s == LITHE_OK) s = s2;
        }
        if (s != LITHE_OK) { fail("saving the model", s); goto done; }
        printf("saved the tagger (averaged weights) to %s\n", save);
    }
    rc = 0;
done:
    for (int i = 0; tags && i < batch_size; i++) lithe_tensor_release(tags[i]);
    free(tags);
    free(d);
    free(train);
    free(u);
    lithe_optimizer_free(opt);
    lithe_model_free(model);
    corpus_free(&c);
    return rc;
}
