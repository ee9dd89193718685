/*
 * Config files: a YAML mapping of `surge profile` flags (docs/config.md). Every long option is a key, by the same
 * table getopt reads (sg_config_options), so there is no second list of keys: each key becomes the flag it names
 * ("--key=value", one per item of a list for a repeatable flag, a list joined with commas for the others; true or
 * false for a flag without a value) and the words go ahead of the command line's, into the one parse.
 */
#ifndef SG_CFGFILE_H
#define SG_CFGFILE_H

#include "sg_common.h"

typedef struct {
    int argc;
    char **argv;     /* the words to parse: the caller's argv itself when no --config was given */
    char *path;      /* --config FILE as given; NULL without one */
    char sha256[65]; /* the file's SHA-256, lowercase hex */
    char **own;      /* what this struct allocated: the new argv's file words */
    size_t n_own;
    bool expanded; /* argv is a new array (freed by sg_cfgfile_free) */
} sg_cfgfile_t;

/*
 * With --config FILE (or -f FILE) in argv[1..argc): reads FILE and makes out->argv = argv[0], the file's flags,
 * then argv's words without the --config pair. The file's words for an option argv also gives (by any of its
 * names, or its no- form) are left out, so argv's win: a single value replaces the file's, and a repeatable flag
 * given on the command line replaces the file's whole list. Every problem in the file (YAML syntax, an unknown key,
 * a key given twice, a value its flag refuses) is one line on stderr with FILE:LINE; then SG_EINVAL. Without
 * --config, out->argv is argv. 0 on success; sg_cfgfile_free releases out in every case.
 */
SG_WUR int sg_cfgfile_expand(int argc, char **argv, sg_cfgfile_t *out);
void sg_cfgfile_free(sg_cfgfile_t *cf);
/* "FILE:LINE" of the key a word of the last expansion came from; NULL for any other word. */
const char *sg_cfgfile_where(const char *word);

/* `surge config validate|expand|init|keys ...`: argv[0] is "config". Returns the exit status. */
int sg_config_main(int argc, char **argv);

#endif
