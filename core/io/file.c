/* Writing a file so that a crash or a full disk never leaves a half-written one: a temporary file
 * beside the target, written whole, flushed to disk, then renamed over it. */
#define _POSIX_C_SOURCE 200809L
#include "../internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
    lithe__free(tmp);
    return s;
}
