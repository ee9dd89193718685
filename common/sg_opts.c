/* Long options by their full names only: see sg_opts.h. */
#include "sg_opts.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static const struct option *find_long(const struct option *longs, const char *name, size_t len)
{
    for (const struct option *o = longs; o->name; o++)
        if (strlen(o->name) == len && memcmp(o->name, name, len) == 0)
            return o;
    return NULL;
}

static bool listed(const char **out, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(out[i], name) == 0)
            return true;
    return false;
}

size_t sg_opts_suggest(const char *typed, const struct option *longs, const char **out, size_t max)
{
    size_t len = strcspn(typed, "="), n = 0;
    if (len == 0)
        return 0;
    for (const struct option *o = longs; o->name && n < max; o++)
        if (strncmp(o->name, typed, len) == 0 && !listed(out, n, o->name))
            out[n++] = o->name;
    if (n)
        return n;
    /* --streams, --isl-mean: a flag of the same family */
    size_t word = strcspn(typed, "-=");
    for (const struct option *o = longs; o->name && n < max; o++)
        if (strncmp(o->name, typed, word) == 0 && (o->name[word] == '-' || o->name[word] == '\0') &&
            !listed(out, n, o->name))
            out[n++] = o->name;
    return n;
}

/* Whether short option c takes a value: 0 no, 1 required (the rest of the cluster or the next argument), 2
 * optional (the rest of the cluster only). */
static int short_arg(const char *shorts, char c)
{
    const char *p = c && c != ':' ? strchr(shorts, c) : NULL;
    if (!p)
        return 0;
    if (p[1] != ':')
        return 0;
    return p[2] == ':' ? 2 : 1;
}

int sg_opts_check(const char *prog, const char *help, int argc, char *const *argv, const char *shorts,
                  const struct option *longs)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0)
            return 0;
        if (a[0] != '-' || a[1] == '\0')
            continue; /* an operand; getopt_long moves it aside */
        if (a[1] != '-') {
            /* a cluster of short options: an option that takes a value ends it */
            for (const char *c = a + 1; *c; c++) {
                int kind = short_arg(shorts, *c);
                if (kind == 0)
                    continue;
                if (kind == 1 && c[1] == '\0')
                    i++; /* the value is the next argument */
                break;
            }
            continue;
        }
        const char *name = a + 2;
        size_t len = strcspn(name, "=");
        const struct option *o = find_long(longs, name, len);
        if (o) {
            if (o->has_arg == required_argument && name[len] != '=')
                i++;
            continue;
        }
        const char *maybe[4];
        size_t n = sg_opts_suggest(name, longs, maybe, sizeof maybe / sizeof maybe[0]);
        fprintf(stderr, "%s: unknown option --%.*s", prog, (int)len, name);
        for (size_t k = 0; k < n; k++)
            fprintf(stderr, "%s--%s", k == 0 ? " (did you mean " : k + 1 == n ? " or " : ", ", maybe[k]);
        if (n)
            fputs("?)\n", stderr);
        else
            fprintf(stderr, " (see %s)\n", help);
        return -1;
    }
    return 0;
}
