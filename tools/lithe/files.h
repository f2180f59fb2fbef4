/* lithe info / run / convert (tools/lithe/files.c). Each takes the arguments after the command
 * and returns the process exit status. */
#ifndef LITHE_TOOLS_FILES_H
#define LITHE_TOOLS_FILES_H
int lithe_cmd_info(int argc, char **argv);
int lithe_cmd_run(int argc, char **argv);
int lithe_cmd_convert(int argc, char **argv);
/* compress.c: convert --weights, and the quantize command. */
int lithe_convert_weights(const char *in, const char *weights, const char *match, const char *out);
int lithe_cmd_quantize(int argc, char **argv);
#endif
