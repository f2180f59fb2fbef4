/* Writing a file so that a crash or a full disk never leaves a half-written one: a temporary file
 * beside the target, written whole, flushed to disk, then renamed over it. A save that was killed
 * leaves its "<path>.tmp-<pid>"; the next successful save of the same path removes those whose
 * process is gone, so they do not accumulate. */
#define _POSIX_C_SOURCE 200809L
#include "../internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if !defined(__wasi__) && !defined(__EMSCRIPTEN__) && !defined(_WIN32)
#define LITHE_CLEAN_STALE_TMP 1
#include <dirent.h>
#include <signal.h>
#include <sys/types.h>
#endif

#ifdef LITHE_CLEAN_STALE_TMP
/* Removes the temp files that killed saves of `path` left behind: "<name>.tmp-<pid>" beside it
 * whose process no longer exists (kill(pid, 0) answers ESRCH). A live process's file, ours
 * included, is left alone; so is anything not named exactly so. Failures are ignored: this is
 * housekeeping, the save itself does not depend on it. */
static void remove_stale_tmp(const char *path) {
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t dlen = slash ? (size_t)(slash - path) : 0, blen = strlen(base);
    char *dir = lithe__malloc(dlen + 2);
    if (!dir) return;
    if (slash) {
        memcpy(dir, path, dlen ? dlen : 1); /* "/x": the root */
        dir[dlen ? dlen : 1] = '\0';
    } else {
        strcpy(dir, ".");
    }
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        const char *nm = e->d_name;
        if (strncmp(nm, base, blen) != 0 || strncmp(nm + blen, ".tmp-", 5) != 0) continue;
        const char *digits = nm + blen + 5;
        char *end = NULL;
        errno = 0;
        long pid = strtol(digits, &end, 10);
        if (!*digits || *end || errno || pid <= 0 || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* alive (or not ours to judge) */
        size_t fl = strlen(dir) + 1 + strlen(nm) + 1;
        char *full = lithe__malloc(fl);
        if (!full) break;
        snprintf(full, fl, "%s/%s", dir, nm);
        remove(full);
        lithe__free(full);
    }
    if (d) closedir(d);
    lithe__free(dir);
}
#endif

lithe_status lithe__write_file_atomic(const char *path, const uint8_t *data, size_t len) {
    size_t n = strlen(path);
    char *tmp = lithe__malloc(n + 32);
    if (!tmp) return lithe__oom(path, n + 32);
#ifdef __wasi__
    /* WASI has no process ids; one instance is one process, so a counter keeps names apart */
    static unsigned long lithe__tmp_counter;
    snprintf(tmp, n + 32, "%s.tmp-wasi%lu", path, ++lithe__tmp_counter);
#else
    snprintf(tmp, n + 32, "%s.tmp-%ld", path, (long)getpid());
#endif
    FILE *f = fopen(tmp, "wb");
    lithe_status s = LITHE_OK;
    if (!f) {
        s = lithe__fail(LITHE_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
    } else {
        if (len && fwrite(data, 1, len, f) != len) s = lithe__fail(LITHE_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
        if (s == LITHE_OK && fflush(f) != 0) s = lithe__fail(LITHE_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
        if (s == LITHE_OK && fsync(fileno(f)) != 0 && errno != EINVAL && errno != ENOSYS)
            s = lithe__fail(LITHE_ERR_IO, "cannot flush %s to disk: %s", tmp, strerror(errno));
        if (fclose(f) != 0 && s == LITHE_OK) s = lithe__fail(LITHE_ERR_IO, "cannot close %s: %s", tmp, strerror(errno));
        if (s == LITHE_OK && rename(tmp, path) != 0)
            s = lithe__fail(LITHE_ERR_IO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        if (s != LITHE_OK) remove(tmp);
    }
#ifdef LITHE_CLEAN_STALE_TMP
    if (s == LITHE_OK) remove_stale_tmp(path);
#endif
    lithe__free(tmp);
    return s;
}

/* A whole file into a new buffer (lithe__free it). */
lithe_status lithe__read_file(const char *path, uint8_t **out, size_t *len) {
    *out = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return lithe__fail(LITHE_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    lithe_status s = LITHE_OK;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 1 << 16;
            uint8_t *nb = lithe__realloc(buf, cap);
            if (!nb) {
                s = lithe__oom(path, cap);
                break;
            }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) s = lithe__fail(LITHE_ERR_IO, "cannot read %s: %s", path, strerror(errno));
            break;
        }
    }
    fclose(f);
    if (s != LITHE_OK) {
        lithe__free(buf);
        return s;
    }
    *out = buf;
    *len = n;
    return LITHE_OK;
}
