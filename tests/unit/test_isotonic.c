/*
 * sg_isotonic.h against values computed by hand: the pool-adjacent-violators fit (weighted means of the pooled
 * blocks), and where a fit crosses zero.
 */
#include "sg_isotonic.h"
#include "test.h"

static void fit_is(const double *y, const double *w, size_t n, const double *want, int line)
{
    double fit[16];
    test_checks++;
    if (sg_isotonic_fit(y, w, n, fit) != 0) {
        test_failures++;
        fprintf(stderr, "test_isotonic.c:%d: the fit failed\n", line);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        test_checks++;
        if (!(fabs(fit[i] - want[i]) <= 1e-12)) {
            test_failures++;
            fprintf(stderr, "test_isotonic.c:%d: fit[%zu] = %.12g, want %.12g\n", line, i, fit[i], want[i]);
        }
    }
}

int main(void)
{
    const double one[] = {1, 1, 1, 1, 1, 1};
    /* already in order: unchanged */
    fit_is((double[]){-2, -1, 0, 3}, one, 4, (double[]){-2, -1, 0, 3}, __LINE__);
    /* one violating pair: pooled to its mean */
    fit_is((double[]){1, 3, 2, 4}, one, 4, (double[]){1, 2.5, 2.5, 4}, __LINE__);
    /* a block that grows backwards: 5 and 1 -> 3, then with 1 -> 7/3, then with 1 -> 2 */
    fit_is((double[]){0, 5, 1, 1, 1}, one, 5, (double[]){0, 2, 2, 2, 2}, __LINE__);
    /* a late low value pools everything before it: -6 and 3 -> -1.5, with 2 -> -1/3, with 1 -> 0 */
    fit_is((double[]){1, 2, 3, -6}, one, 4, (double[]){0, 0, 0, 0}, __LINE__);
    /* decreasing throughout: one block, the mean */
    fit_is((double[]){3, 2, 1}, one, 3, (double[]){2, 2, 2}, __LINE__);
    /* weighted: (0.02 * 50 - 0.005 * 150) / 200 = 0.00125 */
    const double y[] = {-0.01, 0.02, -0.005, 0.03}, w[] = {100, 50, 150, 100};
    fit_is(y, w, 4, (double[]){-0.01, 0.00125, 0.00125, 0.03}, __LINE__);
    /* binomial shares weighted by their counts: the pooled share, 2 + 1 of 100 + 200 */
    fit_is((double[]){0.02, 0.005}, (double[]){100, 200}, 2, (double[]){0.01, 0.01}, __LINE__);
    /* in place */
    double v[] = {1, 3, 2, 4};
    CHECK(sg_isotonic_fit(v, one, 4, v) == 0);
    CHECK_NEAR(v[1], 2.5, 1e-12);
    CHECK_NEAR(v[2], 2.5, 1e-12);
    CHECK(sg_isotonic_fit(v, one, 0, v) == 0);

    /* the crossing: between the last value <= 0 and the first > 0, on the line between them */
    const double x[] = {40, 42, 44, 46};
    double fit[4], at = -1;
    CHECK(sg_isotonic_fit(y, w, 4, fit) == 0);
    CHECK(sg_isotonic_crossing(x, fit, 4, &at) == SG_ISO_CROSSING);
    CHECK_NEAR(at, 40 + 0.01 * 2 / 0.01125, 1e-9); /* 41.777... */
    /* a fitted 0 meets the SLO: the crossing is past it */
    CHECK(sg_isotonic_crossing(x, (double[]){-0.01, 0, 0, 0.03}, 4, &at) == SG_ISO_CROSSING);
    CHECK_NEAR(at, 44, 1e-12);
    CHECK(sg_isotonic_crossing(x, (double[]){-0.5, -0.25, 0.25, 1}, 4, &at) == SG_ISO_CROSSING);
    CHECK_NEAR(at, 43, 1e-12);
    /* all met: at least the highest value; none met: below the lowest */
    CHECK(sg_isotonic_crossing(x, (double[]){-3, -2, -1, 0}, 4, &at) == SG_ISO_AT_LEAST);
    CHECK_NEAR(at, 46, 0);
    CHECK(sg_isotonic_crossing(x, (double[]){0.1, 0.2, 0.3, 0.4}, 4, &at) == SG_ISO_BELOW);
    CHECK_NEAR(at, 40, 0);
    at = -1;
    CHECK(sg_isotonic_crossing(x, fit, 0, &at) == SG_ISO_NONE);
    CHECK_NEAR(at, -1, 0);
    CHECK(sg_isotonic_crossing(x, (double[]){0.5}, 1, &at) == SG_ISO_BELOW);
    CHECK(sg_isotonic_crossing(x, (double[]){-0.5}, 1, &at) == SG_ISO_AT_LEAST);
    CHECK(strcmp(sg_iso_kind_name(SG_ISO_CROSSING), "crossing") == 0);
    CHECK(strcmp(sg_iso_kind_name(SG_ISO_AT_LEAST), "at_least") == 0);
    CHECK(strcmp(sg_iso_kind_name(SG_ISO_BELOW), "below") == 0);
    return test_finish("test_isotonic");
}
