/* The lithe command's shared parts: option messages and the progress display (cli.h). */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void cli_begin(void) {
    opterr = 0; /* the messages are ours (cli_bad_option): they name the subcommand */
    optind = 1;
}

int cli_bad_option(const char *cmd, char **argv, int c) {
    /* getopt_long has moved optind past the offending word. A long option is named as written
     * (up to '='); a short one by optopt. */
    const char *word = optind > 0 ? argv[optind - 1] : NULL;
    char name[128];
    if (word && word[0] == '-' && word[1] == '-') {
        size_t n = strcspn(word, "=");
        snprintf(name, sizeof name, "%.*s", (int)(n < 100 ? n : 100), word);
    } else if (optopt > 0 && optopt < 128) {
        snprintf(name, sizeof name, "-%c", optopt);
    } else {
        snprintf(name, sizeof name, "%.100s", word ? word : "?");
    }
    if (c == ':')
        fprintf(stderr, "lithe %s: option %s needs a value (lithe %s --help)\n", cmd, name, cmd);
    else if (word && word[0] == '-' && word[1] == '-' && strchr(word, '='))
        fprintf(stderr, "lithe %s: unknown option %s, or it takes no value (lithe %s --help)\n", cmd, name, cmd);
    else
        fprintf(stderr, "lithe %s: unknown option %s (lithe %s --help)\n", cmd, name, cmd);
    return CLI_USAGE;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    fprintf(stderr, "lithe %s: ", cmd);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (lithe %s --help)\n", cmd);
    return CLI_USAGE;
}

int cli_long(const char *cmd, const char *name, const char *v, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (!*v || *end || errno || x < lo || x > hi) {
        fprintf(stderr, "lithe %s: --%s: '%s' is not a whole number from %ld to %ld\n", cmd, name, v, lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

int cli_u64(const char *cmd, const char *name, const char *v, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (!*v || *end || errno || v[0] == '-') {
        fprintf(stderr, "lithe %s: --%s: '%s' is not a whole number from 0 to 2^64-1\n", cmd, name, v);
        return -1;
    }
    *out = x;
    return 0;
}

int cli_double(const char *cmd, const char *name, const char *v, double lo, double hi, double *out) {
    char *end;
    double x = strtod(v, &end);
    if (!*v || *end || !(x >= lo && x <= hi)) {
        fprintf(stderr, "lithe %s: --%s: '%s' is not a number from %g to %g\n", cmd, name, v, lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

int cli_choice(const char *cmd, const char *name, const char *v, const char *const *choices) {
    for (const char *const *c = choices; *c; c++)
        if (!strcmp(v, *c)) return 0;
    fprintf(stderr, "lithe %s: --%s: '%s' is not one of", cmd, name, v);
    for (const char *const *c = choices; *c; c++) fprintf(stderr, " %s", *c);
    fprintf(stderr, "\n");
    return -1;
}

double cli_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- progress ---- */

static void format_duration(double s, char *buf, size_t cap) {
    if (!(s >= 0.0) || s > 1e7) snprintf(buf, cap, "?");
    else if (s < 60.0) snprintf(buf, cap, "%.*f s", s < 10.0 ? 1 : 0, s);
    else if (s < 3600.0) snprintf(buf, cap, "%d:%02d", (int)s / 60, (int)s % 60);
    else snprintf(buf, cap, "%d:%02d:%02d", (int)s / 3600, (int)s / 60 % 60, (int)s % 60);
}

void cli_progress_start(cli_progress *p, const char *label, int64_t total, const char *unit) {
    memset(p, 0, sizeof *p);
    snprintf(p->label, sizeof p->label, "%s", label);
    p->unit = unit;
    p->total = total;
    p->t0 = p->last_draw = cli_now();
    p->bar = isatty(STDERR_FILENO) == 1;
    p->interval = 10.0;
    const char *env = getenv("LITHE_PROGRESS");
    if (env && *env) {
        char *end;
        double v = strtod(env, &end);
        if (!strcmp(env, "bar")) p->bar = p->forced = true;
        else if (!*end && v >= 0.0) {
            p->bar = false;
            p->interval = v; /* 0: off */
        }
    }
    if (!p->bar && p->interval <= 0.0) p->total = -1; /* off */
}

void cli_progress_update(cli_progress *p, int64_t done, const char *extra) {
    if (p->total < 0) return;
    p->done = done;
    double t = cli_now(), el = t - p->t0;
    /* the bar after a second, then 10 times a second; plain lines every interval */
    if (p->bar ? ((el < 1.0 && !p->forced) || (t - p->last_draw < 0.1 && p->drawn)) : (t - p->last_draw < p->interval))
        return;
    p->last_draw = t;
    double rate = el > 0.0 ? (double)done / el : 0.0;
    double frac = p->total > 0 ? (double)done / (double)p->total : 0.0;
    if (frac > 1.0) frac = 1.0;
    char eta[32];
    format_duration(rate > 0.0 ? (double)(p->total - done) / rate : -1.0, eta, sizeof eta);
    if (p->bar) {
        char bar[21];
        int fill = (int)(frac * 20.0);
        for (int i = 0; i < 20; i++) bar[i] = i < fill ? '#' : '.';
        bar[20] = '\0';
        fprintf(stderr, "\r%s  [%s] %3d%%  %lld/%lld %s  %.0f %s/s  ETA %s%s%s\033[K", p->label, bar,
                (int)(frac * 100.0), (long long)done, (long long)p->total, p->unit, rate, p->unit, eta,
                extra ? "  " : "", extra ? extra : "");
        p->drawn = true;
    } else {
        fprintf(stderr, "%s: %lld/%lld %s (%d%%), %.0f %s/s, ETA %s%s%s\n", p->label, (long long)done,
                (long long)p->total, p->unit, (int)(frac * 100.0), rate, p->unit, eta, extra ? ", " : "",
                extra ? extra : "");
    }
    fflush(stderr);
}

void cli_progress_end(cli_progress *p) {
    if (p->drawn) {
        fprintf(stderr, "\r\033[K");
        fflush(stderr);
    }
    p->drawn = false;
    p->total = -1;
}
