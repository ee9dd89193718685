/*
 * The --slo parser (metrics/slo.c) on arbitrary text. Checks, for every input:
 *  - it returns 0 or SG_EINVAL, and an error is one non-empty line;
 *  - a parsed check is whole: a percentile strictly between 0 and 100, a finite target, a non-empty canonical text;
 *  - the canonical text parses again to the same check (what the tables and files print reads back the same);
 *  - its unit and the number of requests a verdict needs can be asked of it without a crash.
 */
#include "sg_slo.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAIL(...)                                                                                                      \
    do {                                                                                                               \
        fprintf(stderr, __VA_ARGS__);                                                                                  \
        fprintf(stderr, "\n");                                                                                         \
        abort();                                                                                                       \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    sg_slo_check_t c, again;
    char err[256] = "";
    int rc = sg_slo_parse(text, &c, err, sizeof err);
    if (rc != 0) {
        if (rc != SG_EINVAL)
            FAIL("sg_slo_parse returned %d", rc);
        if (!err[0] || strchr(err, '\n'))
            FAIL("error is not one non-empty line: \"%s\"", err);
        free(text);
        return 0;
    }
    if (!isfinite(c.target))
        FAIL("target %g is not finite for \"%s\"", c.target, text);
    if (c.kind == SG_SLO_DIST && c.stat == SG_SLO_STAT_PCT && !(c.pct > 0 && c.pct < 100))
        FAIL("percentile %g out of (0, 100) for \"%s\"", c.pct, text);
    if (!c.text[0] || !memchr(c.text, '\0', sizeof c.text))
        FAIL("no canonical text for \"%s\"", text);
    if (sg_slo_parse(c.text, &again, err, sizeof err) != 0)
        FAIL("canonical \"%s\" (of \"%s\") does not parse: %s", c.text, text, err);
    if (again.kind != c.kind || again.metric != c.metric || again.stat != c.stat || again.op != c.op ||
        again.pct != c.pct || again.target != c.target || strcmp(again.text, c.text) != 0)
        FAIL("canonical \"%s\" of \"%s\" reads back as another check (\"%s\", target %.17g vs %.17g, pct %.17g vs "
             "%.17g)",
             c.text, text, again.text, again.target, c.target, again.pct, c.pct);
    (void)sg_slo_unit(&c);
    (void)sg_slo_min_n(&c, 0.95); /* any count: error_rate<1e-16 does need about 1e16 requests */
    free(text);
    return 0;
}
