/* The lithe command's shared parts (tools/lithe/cli.c): one way to parse options (getopt_long,
 * in glibc and in wasi-libc), one set of messages for a wrong option or value, the exit codes, and
 * the progress display of long operations.
 *
 * Every subcommand parses its arguments the same way: argv[0] is the subcommand's name, options
 * come from a `struct option` table with {"help", no_argument, NULL, 'h'}, and the optstring starts
 * with ':' so that a missing value and an unknown option are told apart:
 *
 *     cli_begin();
 *     while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) switch (c) {
 *         case 'h': usage(stdout); return CLI_OK;
 *         ...
 *         default: return cli_bad_option("info", argv, c);
 *     }
 *     positional arguments: argv[optind .. argc)
 */
#ifndef LITHE_TOOLS_CLI_H
#define LITHE_TOOLS_CLI_H
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* The exit codes of every subcommand (docs/cli.md). */
enum { CLI_OK = 0, CLI_RUNTIME = 1, CLI_USAGE = 2 };
#define CLI_EXIT_HELP \
    "exit status: 0 success; 1 runtime error (a file, a model, a device, a failed step);\n" \
    "             2 usage error (an unknown option, a missing or bad value)\n"

/* Resets getopt_long for a fresh argument vector and turns off its own messages. */
void cli_begin(void);
/* After getopt_long returned '?' or ':' (or an option the caller does not handle): prints
 * "lithe CMD: unknown option --x" or "lithe CMD: option --x needs a value" and returns CLI_USAGE. */
int cli_bad_option(const char *cmd, char **argv, int c);
/* An unexpected positional argument, or a missing one: prints "lithe CMD: WHAT" and a pointer to
 * --help; returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...);

/* Parse optarg for option `name`; on a bad value they print "lithe CMD: --name: 'v' is not ..."
 * and return -1 (the caller returns CLI_USAGE). */
int cli_long(const char *cmd, const char *name, const char *v, long lo, long hi, long *out);
int cli_u64(const char *cmd, const char *name, const char *v, uint64_t *out);
int cli_double(const char *cmd, const char *name, const char *v, double lo, double hi, double *out);
/* v must be one of the NULL-terminated choices. */
int cli_choice(const char *cmd, const char *name, const char *v, const char *const *choices);

double cli_now(void); /* seconds, monotonic */

/* Progress of an operation with a known amount of work, on stderr (stdout stays the report):
 * on a terminal (isatty) a bar redrawn in place at most 10 times a second,
 *     epoch 1  [########............]  41%  24576/60000 examples  31250 examples/s  ETA 1.1 s  loss 0.53
 * and erased when the operation ends; elsewhere (a pipe, a log file, WASI without a tty) a plain
 * line every 10 seconds,
 *     epoch 1: 24576/60000 examples (41%), 31250 examples/s, ETA 1 s, loss 0.53
 * The bar appears after the operation's first second, so a short one shows nothing. LITHE_PROGRESS=0
 * turns progress off; LITHE_PROGRESS=SECONDS gives plain lines at that interval (e.g. 0.5);
 * LITHE_PROGRESS=bar draws the bar even when stderr is not a terminal, from the first update. */
typedef struct cli_progress {
    char label[64];
    const char *unit;
    int64_t total, done;
    double t0, last_draw;
    double interval; /* plain lines: seconds between them; 0: off */
    bool bar, drawn, forced; /* forced: LITHE_PROGRESS=bar, drawn from the first update */
} cli_progress;

void cli_progress_start(cli_progress *p, const char *label, int64_t total, const char *unit);
/* `done` units finished so far; `extra` (may be NULL) is appended, e.g. "loss 0.53". */
void cli_progress_update(cli_progress *p, int64_t done, const char *extra);
/* Erases the bar (the caller then prints its own summary line). */
void cli_progress_end(cli_progress *p);

#endif
