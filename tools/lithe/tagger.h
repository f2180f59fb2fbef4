/* lithe train-tagger (tagger.c): the sequence demo. */
#ifndef LITHE_TOOLS_TAGGER_H
#define LITHE_TOOLS_TAGGER_H

int lithe_cmd_train_tagger(int argc, char **argv);

#endif
