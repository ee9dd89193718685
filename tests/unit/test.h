/* A tiny test harness: CHECK records a failure and goes on; the test's main returns test_finish(). */
#ifndef SG_TEST_H
#define SG_TEST_H

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static int test_failures;
static int test_checks;

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        test_checks++;                                                                                                 \
        if (!(cond)) {                                                                                                 \
            test_failures++;                                                                                           \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                                   \
        }                                                                                                              \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                                                             \
    do {                                                                                                               \
        long long va_ = (long long)(a), vb_ = (long long)(b);                                                          \
        test_checks++;                                                                                                 \
        if (va_ != vb_) {                                                                                              \
            test_failures++;                                                                                           \
            fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__, __LINE__, #a, #b, va_, vb_);           \
        }                                                                                                              \
    } while (0)

#define CHECK_EQ_STR(a, alen, b)                                                                                       \
    do {                                                                                                               \
        size_t la_ = (size_t)(alen);                                                                                   \
        test_checks++;                                                                                                 \
        if (la_ != strlen(b) || memcmp((a), (b), la_) != 0) {                                                          \
            test_failures++;                                                                                           \
            fprintf(stderr, "%s:%d: got \"%.*s\", want \"%s\"\n", __FILE__, __LINE__, (int)la_, (a), (b));             \
        }                                                                                                              \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                                          \
    do {                                                                                                               \
        double va_ = (double)(a), vb_ = (double)(b);                                                                   \
        test_checks++;                                                                                                 \
        if (!(fabs(va_ - vb_) <= (tol))) {                                                                             \
            test_failures++;                                                                                           \
            fprintf(stderr, "%s:%d: %s ~= %s failed: %.9g vs %.9g (tol %g)\n", __FILE__, __LINE__, #a, #b, va_, vb_,   \
                    (double)(tol));                                                                                    \
        }                                                                                                              \
    } while (0)

static inline int test_finish(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, test_checks, test_failures);
    return test_failures ? 1 : 0;
}

#endif
