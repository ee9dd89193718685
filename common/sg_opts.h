/*
 * Long options by their full names only. glibc's getopt_long takes any unambiguous prefix of a long option as
 * that option, so `--isl 128` became --isl-block-size and `--stream` --streaming: a flag the user never typed,
 * silently. sg_opts_check runs before getopt_long and refuses every long option that is not spelled out in full
 * (an alias is a table entry of its own), with the flags it may have meant.
 */
#ifndef SG_OPTS_H
#define SG_OPTS_H

#include <getopt.h>
#include <stddef.h>

/*
 * Scan argv[1..argc) as getopt_long(argc, argv, shorts, longs) would, up to a "--": every "--name" or
 * "--name=value" must name an entry of longs exactly; values of options that take one (the next argument, or
 * the rest of a short-option cluster) are skipped, not read as options. Returns 0, or -1 after one line on stderr:
 * "<prog>: unknown option --stream (did you mean --streaming?)", or, with nothing close,
 * "<prog>: unknown option --foo (see <help>)". prog begins the line; help is the command that lists the options.
 */
int sg_opts_check(const char *prog, const char *help, int argc, char *const *argv, const char *shorts,
                  const struct option *longs);

/*
 * Up to max long-option names (without "--") that the user may have meant by `typed` (its name, "=value" cut):
 * those it is a prefix of, else those that share its first word (up to the first '-'). Returns how many were put
 * in out.
 */
size_t sg_opts_suggest(const char *typed, const struct option *longs, const char **out, size_t max);

#endif
