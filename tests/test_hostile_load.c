/* Checked at load, before allocation (issue 30). The hostile corpus (fuzz/hostile/MANIFEST: a
 * file, the status its load must return and a fragment of the message) is loaded under an
 * allocator that refuses (and records) any request over 1 GiB, so a reader that allocates what a
 * file declares before checking it against the bytes present fails here even where the machine
 * would have granted the memory. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "lithe.h"
#include "hostile.h"

#ifndef HOSTILE_DIR
#define HOSTILE_DIR "fuzz/hostile"
#endif

/* ---- an allocator that refuses requests over 1 GiB ---- */

static size_t biggest_refused;
static void *cap_malloc(void *u, size_t n) {
    (void)u;
    if (n > ((size_t)1 << 30)) {
        if (n > biggest_refused) biggest_refused = n;
        return NULL;
    }
    return malloc(n);
}
static void *cap_realloc(void *u, void *p, size_t n) {
    (void)u;
    if (n > ((size_t)1 << 30)) {
        if (n > biggest_refused) biggest_refused = n;
        return NULL;
    }
    return realloc(p, n);
}
static void cap_free(void *u, void *p) {
    (void)u;
    free(p);
}
static const lithe_allocator capped = {cap_malloc, cap_realloc, cap_free, NULL};

static lithe_status status_named(const char *s) {
    for (int st = 0; st < 64; st++)
        if (!strcmp(lithe_status_str((lithe_status)st), s)) return (lithe_status)st;
    return (lithe_status)-1;
}

/* Thinc bytes cases load into Relu(nO=3) initialized on nI=2 (the model make_hostile.py saved). */
static lithe_status load_thinc(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return LITHE_ERR_IO;
    uint8_t buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    lithe_model *m = NULL;
    lithe_tensor *X = NULL;
    lithe_value *Xv = NULL;
    lithe_status s = lithe_relu(&(lithe_dense_opts){.nO = 3}, &m);
    if (s == LITHE_OK) s = lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){1, 2}, (float[]){0, 0}, &X);
    if (s == LITHE_OK) s = lithe_value_tensor(X, &Xv);
    if (s == LITHE_OK) s = lithe_model_initialize(m, Xv, NULL);
    if (s == LITHE_OK) s = lithe_model_from_thinc_bytes(m, buf, n);
    lithe_value_release(Xv);
    lithe_tensor_release(X);
    lithe_model_free(m);
    return s;
}

/* Optimizer-state cases load into Adam for relu(4) >> softmax(2) on nI = 3 (fuzz_optimizer_state's
 * tree). */
static lithe_status load_state(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return LITHE_ERR_IO;
    uint8_t buf[8192];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    lithe_model *a = NULL, *b = NULL, *m = NULL;
    lithe_optimizer *opt = NULL;
    lithe_optimizer_opts o = lithe_adam_defaults();
    lithe_status s = lithe_dense("Relu.v1", &(lithe_dense_opts){.nO = 4, .nI = 3}, &a);
    if (s == LITHE_OK) s = lithe_softmax(&(lithe_softmax_opts){.nO = 2, .nI = 4}, &b);
    if (s == LITHE_OK) s = lithe_chain(2, (lithe_model *[]){a, b}, &m);
    if (s == LITHE_OK) s = lithe_model_initialize(m, NULL, NULL);
    if (s == LITHE_OK) s = lithe_optimizer_new(&o, &opt);
    if (s == LITHE_OK) s = lithe_optimizer_load_state(opt, m, buf, n);
    lithe_optimizer_free(opt);
    lithe_model_free(m);
    return s;
}

void test_hostile_corpus(void **state) {
    (void)state;
    FILE *mf = fopen(HOSTILE_DIR "/MANIFEST", "r");
    assert_non_null(mf);
    char line[512];
    int cases = 0, bad = 0;
    OK(lithe_set_allocator(&capped));
    while (fgets(line, sizeof line, mf)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        char file[128], want[64], frag[256] = "";
        if (sscanf(line, "%127s %63s %255[^\n]", file, want, frag) < 2) continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", HOSTILE_DIR, file);
        biggest_refused = 0;
        lithe_clear_error();
        lithe_model *m = NULL;
        size_t fl = strlen(file);
        lithe_status s = fl > 4 && !strcmp(file + fl - 4, ".bin")     ? load_thinc(path)
                         : fl > 6 && !strcmp(file + fl - 6, ".state") ? load_state(path)
                                                                      : lithe_model_load(path, &m);
        lithe_model_free(m);
        cases++;
        const char *msg = lithe_last_error();
        if (s != status_named(want) || !strstr(msg, frag)) {
            print_error("%s: got %s (\"%s\"), want %s with \"%s\"\n", file, lithe_status_str(s), msg, want, frag);
            bad++;
        }
        if (biggest_refused) {
            print_error("%s: asked for %zu bytes before checking the file\n", file, biggest_refused);
            bad++;
        }
    }
    fclose(mf);
    OK(lithe_set_allocator(NULL));
    print_message("hostile corpus: %d cases\n", cases);
    assert_true(cases >= 10);
    assert_int_equal(bad, 0);
}

/* ---- .lithe files damaged in their architecture ---- */

/* Overwrites the JSON number after `key` (e.g. "\"nO\":") with `num`, padded with spaces. */
static void patch_number(uint8_t *b, size_t n, const char *key, const char *num) {
    size_t kl = strlen(key);
    for (size_t i = 0; i + kl < n; i++)
        if (!memcmp(b + i, key, kl)) {
            size_t j = i + kl;
            while (j < n && b[j] == ' ') j++;
            size_t e = j;
            while (e < n && (b[e] == '-' || b[e] == '.' || b[e] == 'e' || b[e] == '+' || (b[e] >= '0' && b[e] <= '9'))) e++;
            size_t nl = strlen(num);
            assert_true(nl <= e - j);
            memcpy(b + j, num, nl);
            memset(b + j + nl, ' ', e - j - nl);
            return;
        }
    print_error("no %s in the file\n", key);
    fail();
}

static void dump(const char *name, const uint8_t *b, size_t n) {
    const char *dir = getenv("HOSTILE_DUMP"); /* regenerates the corpus's .lithe cases */
    if (!dir) return;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(b, 1, n, f);
    fclose(f);
}

static void save_bytes(lithe_model *m, uint8_t **b, size_t *n) {
    lithe_tensor *X = NULL;
    lithe_value *Xv = NULL;
    float xs[12] = {0};
    OK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){2, 6}, xs, &X));
    OK(lithe_value_tensor(X, &Xv));
    OK(lithe_model_initialize(m, Xv, NULL));
    OK(lithe_model_save_bytes(m, NULL, b, n));
    lithe_value_release(Xv);
    lithe_tensor_release(X);
}

void test_lithe_dims_and_rates_checked(void **state) {
    (void)state;
    lithe_model *m = NULL, *back = NULL;
    uint8_t *b = NULL;
    size_t n = 0;
    OK(lithe_relu(&(lithe_dense_opts){.nO = 8}, &m));
    save_bytes(m, &b, &n);
    OK(lithe_model_load_bytes(b, n, &back)); /* the undamaged file loads */
    lithe_model_free(back);
    back = NULL;
    patch_number(b, n, "\\\"nO\\\":", "9"); /* nO=9 with W (8, 6) */
    dump("lithe_nO_9_W_8x6.lithe", b, n);
    assert_int_equal(lithe_model_load_bytes(b, n, &back), LITHE_ERR_SHAPE);
    assert_null(back);
    if (!strstr(lithe_last_error(), "nO=9")) {
        print_error("message: %s\n", lithe_last_error());
        fail();
    }
    lithe_buffer_free(b);
    lithe_model_free(m);

    OK(lithe_relu(&(lithe_dense_opts){.nO = 8, .dropout = 0.25f}, &m));
    save_bytes(m, &b, &n);
    patch_number(b, n, "\\\"dropout_rate\\\":{\\\"float\\\":", "5");
    dump("lithe_dropout_5.lithe", b, n);
    assert_int_equal(lithe_model_load_bytes(b, n, &back), LITHE_ERR_VALUE);
    assert_non_null(strstr(lithe_last_error(), "dropout_rate 5"));
    lithe_buffer_free(b);
    lithe_model_free(m);
}

/* ---- a huge file that cannot be mapped is refused, not read whole ---- */

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

void test_huge_unmappable_file_not_read_whole(void **state) {
    (void)state;
#ifdef UNDER_ASAN
    skip(); /* RLIMIT_AS and ASan's shadow memory do not mix */
#else
    char path[] = "/tmp/lithe_hostile_huge_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    /* a sparse 100 GB file: no disk used */
    if (ftruncate(fd, (off_t)100 << 30) != 0) {
        close(fd);
        unlink(path);
        skip();
    }
    close(fd);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit rl = {(rlim_t)4 << 30, (rlim_t)4 << 30}; /* no 100 GB mapping */
        setrlimit(RLIMIT_AS, &rl);
        lithe_model *m = NULL;
        lithe_status s = lithe_model_load(path, &m);
        const char *msg = lithe_last_error();
        int ok = s == LITHE_ERR_OOM && strstr(msg, "not read whole") != NULL;
        if (!ok) fprintf(stderr, "load of a 100 GB unmappable file: %s: %s\n", lithe_status_str(s), msg);
        _exit(ok ? 0 : 1);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    unlink(path);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
#endif
}

/* ---- temp files of killed saves ---- */

void test_stale_tmp_files_removed(void **state) {
    (void)state;
    char dir[] = "/tmp/lithe_hostile_tmp_XXXXXX";
    assert_non_null(mkdtemp(dir));
    pid_t dead = fork(); /* a process id that no longer runs */
    assert_true(dead >= 0);
    if (dead == 0) _exit(0);
    waitpid(dead, NULL, 0);
    char target[256], stale[300], live[300], other[300];
    snprintf(target, sizeof target, "%s/m.lithe", dir);
    snprintf(stale, sizeof stale, "%s.tmp-%ld", target, (long)dead);
    snprintf(live, sizeof live, "%s.tmp-%ld", target, (long)getppid()); /* alive: a save in progress */
    snprintf(other, sizeof other, "%s.tmp-notapid", target);
    const char *files[] = {stale, live, other};
    for (int i = 0; i < 3; i++) {
        FILE *f = fopen(files[i], "wb");
        assert_non_null(f);
        fputs("half a model", f);
        fclose(f);
    }
    lithe_model *m = NULL;
    OK(lithe_relu(&(lithe_dense_opts){.nO = 2}, &m));
    OK(lithe_model_save(m, NULL, target));
    struct stat sb;
    assert_int_equal(stat(stale, &sb), -1); /* removed: its process is gone */
    assert_int_equal(stat(live, &sb), 0);   /* kept: its process is alive */
    assert_int_equal(stat(other, &sb), 0);  /* kept: not a save's temp file */
    assert_int_equal(stat(target, &sb), 0);
    lithe_model_free(m);
    unlink(live);
    unlink(other);
    unlink(target);
    rmdir(dir);
}

/* ---- .npy prefixes, each at the very end of a readable page ---- */

/* Every prefix of a valid .npy, placed so its last byte is the last before a PROT_NONE page: a
 * read past the given length faults (a test that passed the full buffer with a shorter length
 * could not see it). Each must fail with the message of the part it cuts. */
void test_npy_prefixes_exact_size(void **state) {
    (void)state;
    lithe_tensor *t = NULL;
    float v[6] = {1, 2, 3, 4, 5, 6};
    OK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){2, 3}, v, &t));
    uint8_t *npy = NULL;
    size_t n = 0;
    OK(lithe_npy_save(t, &npy, &n));
    size_t hlen = (size_t)npy[8] | (size_t)npy[9] << 8, page = (size_t)sysconf(_SC_PAGESIZE);
    assert_true(n < page);
    uint8_t *area = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(area != MAP_FAILED);
    assert_int_equal(mprotect(area + page, page, PROT_NONE), 0);
    for (size_t len = 0; len < n; len++) {
        uint8_t *p = area + page - len;
        memcpy(p, npy, len);
        lithe_tensor *out = NULL;
        lithe_clear_error();
        lithe_status s = lithe_npy_load(len ? p : NULL, len, &out);
        const char *want = len < 10 ? "not a .npy" : len < 10 + hlen ? "header of" : "data bytes";
        if (s != LITHE_ERR_FORMAT || !strstr(lithe_last_error(), want)) {
            print_error("npy prefix of %zu of %zu bytes: %s \"%s\", want FORMAT with \"%s\"\n", len, n,
                        lithe_status_str(s), lithe_last_error(), want);
            fail();
        }
        assert_null(out);
    }
    munmap(area, 2 * page);
    lithe_buffer_free(npy);
    lithe_tensor_release(t);
}
