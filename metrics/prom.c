/* The Prometheus text exposition parser (sg_prom.h). */
#include "sg_prom.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *sg_prom_type_name(sg_prom_type_t t)
{
    static const char *const names[] = {"untyped", "counter", "gauge", "histogram", "summary"};
    return (unsigned)t < SG_ARRAY_LEN(names) ? names[t] : "untyped";
}

typedef struct {
    const char *p, *end;
} cur_t;

static bool name_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

static bool name_char(char c)
{
    return name_start(c) || (c >= '0' && c <= '9');
}

static void blanks(cur_t *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
        c->p++;
}

static bool take_name(cur_t *c, sg_slice_t *out)
{
    const char *s = c->p;
    if (c->p >= c->end || !name_start(*c->p))
        return false;
    while (c->p < c->end && name_char(*c->p))
        c->p++;
    *out = (sg_slice_t){s, (size_t)(c->p - s)};
    return true;
}

/* A run of non-blank bytes. */
static sg_slice_t take_word(cur_t *c)
{
    const char *s = c->p;
    while (c->p < c->end && *c->p != ' ' && *c->p != '\t')
        c->p++;
    return (sg_slice_t){s, (size_t)(c->p - s)};
}

static bool word_is(sg_slice_t w, const char *lit)
{
    return w.len == strlen(lit) && memcmp(w.base, lit, w.len) == 0;
}

/* A float as the format writes it: Go's ParseFloat forms, NaN, +Inf, -Inf, Inf. */
static bool parse_value(sg_slice_t w, double *out)
{
    if (w.len == 0 || w.len >= 64)
        return false;
    char buf[64];
    memcpy(buf, w.base, w.len);
    buf[w.len] = 0;
    if (strcmp(buf, "NaN") == 0) {
        *out = NAN;
        return true;
    }
    if (strcmp(buf, "+Inf") == 0 || strcmp(buf, "Inf") == 0) {
        *out = INFINITY;
        return true;
    }
    if (strcmp(buf, "-Inf") == 0) {
        *out = -INFINITY;
        return true;
    }
    for (size_t i = 0; i < w.len; i++) /* digits, sign, point, exponent: no hex, no "infinity", no spaces */
        if (!strchr("0123456789+-.eE", buf[i]))
            return false;
    char *e;
    *out = strtod(buf, &e);
    return *e == 0;
}

static bool parse_int(sg_slice_t w, int64_t *out)
{
    if (w.len == 0 || w.len > 19)
        return false;
    size_t i = w.base[0] == '-' ? 1 : 0;
    if (i == w.len)
        return false;
    int64_t v = 0;
    for (; i < w.len; i++) {
        if (w.base[i] < '0' || w.base[i] > '9')
            return false;
        v = v * 10 + (w.base[i] - '0');
    }
    *out = w.base[0] == '-' ? -v : v;
    return true;
}

/* {name="value",...}: values unescaped into scratch. */
static bool parse_labels(cur_t *c, sg_prom_sample_t *s, char *scratch, size_t cap)
{
    size_t used = 0;
    c->p++; /* '{' */
    for (;;) {
        blanks(c);
        if (c->p < c->end && *c->p == '}') {
            c->p++;
            return true;
        }
        if (s->n_labels == SG_PROM_MAX_LABELS)
            return false;
        sg_prom_label_t *l = &s->labels[s->n_labels];
        if (!take_name(c, &l->name))
            return false;
        blanks(c);
        if (c->p >= c->end || *c->p != '=')
            return false;
        c->p++;
        blanks(c);
        if (c->p >= c->end || *c->p != '"')
            return false;
        c->p++;
        const char *start = scratch + used;
        for (;;) {
            if (c->p >= c->end || used >= cap)
                return false;
            char ch = *c->p++;
            if (ch == '"')
                break;
            if (ch == '\\') {
                if (c->p >= c->end)
                    return false;
                char e = *c->p++;
                ch = e == 'n' ? '\n' : e == '\\' ? '\\' : e == '"' ? '"' : 0;
                if (!ch)
                    return false;
            }
            scratch[used++] = ch;
        }
        l->value = (sg_slice_t){start, (size_t)(scratch + used - start)};
        s->n_labels++;
        blanks(c);
        if (c->p < c->end && *c->p == ',')
            c->p++;
        else if (c->p >= c->end || *c->p != '}')
            return false;
    }
}

/* The family a TYPE line named, and its type, for the samples that follow it. */
typedef struct {
    char name[256];
    size_t len;
    sg_prom_type_t type;
} family_t;

static bool has_suffix(sg_slice_t name, const family_t *f, const char *suffix)
{
    size_t sl = strlen(suffix);
    return name.len == f->len + sl && memcmp(name.base, f->name, f->len) == 0 &&
           memcmp(name.base + f->len, suffix, sl) == 0;
}

static sg_prom_type_t type_of(sg_slice_t name, const family_t *f)
{
    if (f->len == 0)
        return SG_PROM_UNTYPED;
    if (name.len == f->len && memcmp(name.base, f->name, f->len) == 0)
        return f->type;
    if ((f->type == SG_PROM_HISTOGRAM || f->type == SG_PROM_SUMMARY) &&
        (has_suffix(name, f, "_bucket") || has_suffix(name, f, "_sum") || has_suffix(name, f, "_count") ||
         has_suffix(name, f, "_created")))
        return f->type;
    if (f->type == SG_PROM_COUNTER && (has_suffix(name, f, "_total") || has_suffix(name, f, "_created")))
        return f->type;
    return SG_PROM_UNTYPED;
}

/* "# TYPE name type" (or HELP, or any comment): updates the family; false only for a malformed TYPE line. */
static bool parse_comment(cur_t *c, family_t *fam)
{
    c->p++; /* '#' */
    blanks(c);
    sg_slice_t kw = take_word(c);
    if (!word_is(kw, "TYPE"))
        return true;
    blanks(c);
    sg_slice_t name;
    if (!take_name(c, &name) || name.len >= sizeof fam->name)
        return false;
    blanks(c);
    sg_slice_t t = take_word(c);
    static const char *const types[] = {"untyped", "counter", "gauge", "histogram", "summary"};
    size_t k = 0;
    while (k < SG_ARRAY_LEN(types) && !word_is(t, types[k]))
        k++;
    if (k == SG_ARRAY_LEN(types))
        return false;
    blanks(c);
    if (c->p != c->end)
        return false;
    memcpy(fam->name, name.base, name.len);
    fam->len = name.len;
    fam->type = (sg_prom_type_t)k;
    return true;
}

static bool parse_sample(cur_t *c, const family_t *fam, sg_prom_sample_t *s, char *scratch)
{
    memset(s, 0, sizeof *s);
    if (!take_name(c, &s->name))
        return false;
    blanks(c);
    if (c->p < c->end && *c->p == '{' && !parse_labels(c, s, scratch, SG_PROM_MAX_LINE))
        return false;
    blanks(c);
    if (!parse_value(take_word(c), &s->value))
        return false;
    blanks(c);
    if (c->p < c->end) {
        if (!parse_int(take_word(c), &s->timestamp_ms))
            return false;
        s->has_timestamp = true;
        blanks(c);
        if (c->p != c->end)
            return false;
    }
    s->type = type_of(s->name, fam);
    return true;
}

int sg_prom_parse(const char *text, size_t len, sg_prom_fn fn, void *ud, size_t *bad_line)
{
    char *scratch = malloc(SG_PROM_MAX_LINE);
    if (!scratch)
        return SG_ENOMEM;
    family_t fam = {.len = 0};
    int n = 0, rc = 0;
    size_t line = 0;
    const char *p = text, *end = text + len;
    while (p < end && rc == 0) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        cur_t c = {p, le > p && le[-1] == '\r' ? le - 1 : le};
        p = nl ? nl + 1 : end;
        line++;
        blanks(&c);
        if (c.p == c.end)
            continue;
        bool ok;
        if (*c.p == '#') {
            ok = parse_comment(&c, &fam);
        } else {
            sg_prom_sample_t s;
            ok = parse_sample(&c, &fam, &s, scratch);
            if (ok) {
                n++;
                if (fn)
                    rc = fn(ud, &s);
            }
        }
        if (!ok) {
            if (bad_line)
                *bad_line = line;
            rc = SG_EPROTO;
        }
    }
    free(scratch);
    return rc < 0 ? rc : n;
}
