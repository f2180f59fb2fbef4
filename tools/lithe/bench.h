/* lithe bench (tools/lithe/bench.c): takes the arguments after the command, returns the exit
 * status. */
#ifndef LITHE_TOOLS_BENCH_H
#define LITHE_TOOLS_BENCH_H
int lithe_cmd_bench(int argc, char **argv);
#endif
