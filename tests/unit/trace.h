/*
 * What the protocol tests and fuzz targets share: a growable trace string, and the split-invariance drivers.
 * A parser is run over an input whole and cut into pieces; the trace of events it reports must not depend on
 * where the cuts fall.
 *
 * Unit tests include test.h first and get trace_check_splits(), which reports through test.h's counters. Fuzz
 * targets (no test.h) get trace_fuzz_splits(), which aborts on a mismatch.
 */
#ifndef SG_TRACE_H
#define SG_TRACE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------- a growable trace string: always NUL-terminated once anything was added ---------- */

typedef struct {
    char *s;
    size_t len, cap;
} str_t;

static inline void str_reserve(str_t *t, size_t n)
{
    if (t->len + n + 1 <= t->cap)
        return;
    size_t cap = t->cap ? t->cap : 256;
    while (cap < t->len + n + 1)
        cap *= 2;
    t->s = realloc(t->s, cap);
    if (!t->s)
        abort();
    t->cap = cap;
}

static inline void str_add(str_t *t, const void *s, size_t n)
{
    str_reserve(t, n);
    if (n)
        memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = '\0';
}

static inline void str_fmt(str_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void str_fmt(str_t *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        abort();
    str_reserve(t, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(t->s + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

/* The string, allocated even when empty (the caller frees). */
static inline char *str_take(str_t *t)
{
    if (!t->s)
        str_add(t, "", 0);
    return t->s;
}

static inline bool str_same(const str_t *a, const str_t *b)
{
    return a->len == b->len && (a->len == 0 || memcmp(a->s, b->s, a->len) == 0);
}

/* ---------- unit tests: whole, every split, every pair of splits, byte by byte ---------- */

#ifdef SG_TEST_H

/* Feed in[0..len) to a fresh parser, cut at cuts[0..n_cuts) (ascending); return the trace (caller frees). */
typedef char *(*trace_run_fn)(const void *ctx, const char *in, size_t len, const size_t *cuts, size_t n_cuts);

/*
 * The whole-input trace must equal want (one check); then every single cut, every pair of cuts when
 * len <= pair_max, and byte-by-byte feeding must give that same trace. A mismatch is a failed check; the ways
 * that agree add no checks of their own. file:line and what name the vector in the messages.
 */
static inline void trace_check_splits(trace_run_fn run, const void *ctx, const char *in, size_t len, size_t pair_max,
                                      const char *want, const char *what, const char *file, int line)
{
    char *whole = run(ctx, in, len, NULL, 0);
    test_checks++;
    if (strcmp(whole, want) != 0) {
        test_failures++;
        fprintf(stderr, "%s:%d: %s\n  got  %s\n  want %s\n", file, line, what, whole, want);
    }
    for (size_t i = 1; i < len; i++) {
        char *t = run(ctx, in, len, &i, 1);
        if (strcmp(t, whole) != 0) {
            CHECK(!"a split changes the trace");
            fprintf(stderr, "  %s:%d %s, split at %zu:\n  got  %s\n  want %s\n", file, line, what, i, t, whole);
        }
        free(t);
    }
    if (len <= pair_max) {
        for (size_t i = 1; i < len; i++)
            for (size_t j = i + 1; j < len; j++) {
                size_t cuts[2] = {i, j};
                char *t = run(ctx, in, len, cuts, 2);
                if (strcmp(t, whole) != 0) {
                    CHECK(!"two splits change the trace");
                    fprintf(stderr, "  %s:%d %s, splits at %zu,%zu:\n  got  %s\n", file, line, what, i, j, t);
                }
                free(t);
            }
    }
    size_t *cuts = malloc((len + 1) * sizeof *cuts);
    for (size_t i = 0; i + 1 < len; i++)
        cuts[i] = i + 1;
    char *t = run(ctx, in, len, cuts, len ? len - 1 : 0);
    if (strcmp(t, whole) != 0) {
        CHECK(!"byte-by-byte feeding changes the trace");
        fprintf(stderr, "  %s:%d %s, byte by byte:\n  got  %s\n", file, line, what, t);
    }
    free(t);
    free(cuts);
    free(whole);
}

#endif /* SG_TEST_H */

/* ---------- fuzz targets: one cut set chosen by the input, abort on a mismatch ---------- */

/* Like trace_run_fn, but the trace may hold any byte (NUL included), so it comes back with its length. */
typedef str_t (*trace_fuzz_run_fn)(const void *ctx, const char *in, size_t len, const size_t *cuts, size_t n_cuts);

/*
 * Cut in[0..len) byte by byte when bytewise, else at up to `want` pseudo-random ascending places drawn from
 * seed (non-zero), alternating long and short (<= 64 bytes) strides; run it so and abort unless the trace
 * equals whole.
 */
static inline void trace_fuzz_splits(trace_fuzz_run_fn run, const void *ctx, const char *in, size_t len,
                                     const str_t *whole, bool bytewise, size_t want, uint32_t seed)
{
    size_t n_cuts = 0;
    size_t *cuts = malloc((len + 1) * sizeof *cuts);
    if (!cuts)
        abort();
    if (bytewise) {
        for (size_t i = 1; i < len; i++)
            cuts[n_cuts++] = i;
    } else if (len > 1) {
        size_t pos = 0;
        for (size_t i = 0; i < want; i++) {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            size_t left = len - 1 - pos;
            if (left == 0)
                break;
            pos += 1 + seed % (left < 64 ? left : (i % 2 ? 64 : left));
            if (pos >= len)
                break;
            cuts[n_cuts++] = pos;
        }
    }
    str_t split = run(ctx, in, len, cuts, n_cuts);
    if (!str_same(whole, &split)) {
        fprintf(stderr, "split feeding differs (%zu cuts)\nwhole: %.*s\nsplit: %.*s\n", n_cuts, (int)whole->len,
                whole->s ? whole->s : "", (int)split.len, split.s ? split.s : "");
        abort();
    }
    free(cuts);
    free(split.s);
}

#endif
