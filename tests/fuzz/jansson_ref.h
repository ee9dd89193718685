/*
 * What the fuzz targets that check a scanner against jansson share: the abort with a message, jansson's nesting
 * depth of a tree, and the refusals of jansson's that our scanners may accept by design.
 */
#ifndef SG_FUZZ_JANSSON_REF_H
#define SG_FUZZ_JANSSON_REF_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAIL(...)                                                                                                      \
    do {                                                                                                               \
        fprintf(stderr, __VA_ARGS__);                                                                                  \
        fprintf(stderr, "\n");                                                                                         \
        abort();                                                                                                       \
    } while (0)

/* Nesting depth: 0 for a scalar, 1 for a flat object or array. */
static inline int depth_of(const json_t *v)
{
    int d = 0;
    if (json_is_object(v)) {
        const char *k;
        json_t *c;
        json_object_foreach((json_t *)v, k, c)
        {
            int cd = depth_of(c);
            d = cd > d ? cd : d;
        }
        return d + 1;
    }
    if (json_is_array(v)) {
        size_t i;
        json_t *c;
        json_array_foreach(v, i, c)
        {
            int cd = depth_of(c);
            d = cd > d ? cd : d;
        }
        return d + 1;
    }
    return 0;
}

/* jansson refused the text for a reason our scanners do not check, by design: no UTF-8 validation, \u0000 in a
 * string, numbers too big for its types. */
static inline bool tolerated(const char *why)
{
    static const char *const ok[] = {"unable to decode byte",    "Invalid UTF-8",          "invalid Unicode",
                                     "\\u0000 is not allowed",   "NUL byte in object key", "too big integer",
                                     "too big negative integer", "real number overflow"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (strstr(why, ok[i]))
            return true;
    return false;
}

#endif
