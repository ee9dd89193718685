/* Weighted isotonic regression (pool-adjacent-violators) and its zero crossing (sg_isotonic.h). */
#include "sg_isotonic.h"

#include <stdlib.h>

int sg_isotonic_fit(const double *y, const double *w, size_t n, double *fit)
{
    if (n == 0)
        return 0;
    /* a stack of blocks, each its weighted mean, its weight and how many points it pools */
    double *mean = malloc(n * sizeof *mean), *wt = malloc(n * sizeof *wt);
    size_t *len = malloc(n * sizeof *len);
    if (!mean || !wt || !len) {
        free(mean);
        free(wt);
        free(len);
        return -1;
    }
    size_t b = 0;
    for (size_t i = 0; i < n; i++) {
        mean[b] = y[i];
        wt[b] = w[i];
        len[b] = 1;
        b++;
        /* pool the new block with those before it while they are out of order */
        while (b > 1 && mean[b - 2] > mean[b - 1]) {
            double sw = wt[b - 2] + wt[b - 1];
            mean[b - 2] = (mean[b - 2] * wt[b - 2] + mean[b - 1] * wt[b - 1]) / sw;
            wt[b - 2] = sw;
            len[b - 2] += len[b - 1];
            b--;
        }
    }
    size_t i = 0;
    for (size_t k = 0; k < b; k++)
        for (size_t j = 0; j < len[k]; j++)
            fit[i++] = mean[k];
    free(mean);
    free(wt);
    free(len);
    return 0;
}

sg_iso_kind_t sg_isotonic_crossing(const double *x, const double *fit, size_t n, double *at)
{
    if (n == 0)
        return SG_ISO_NONE;
    size_t j = 0;
    while (j < n && !(fit[j] > 0))
        j++;
    if (j == n) {
        *at = x[n - 1];
        return SG_ISO_AT_LEAST;
    }
    if (j == 0) {
        *at = x[0];
        return SG_ISO_BELOW;
    }
    /* fit[j - 1] <= 0 < fit[j]: the line between them meets zero at or after x[j - 1] and before x[j] */
    *at = x[j - 1] + (0 - fit[j - 1]) * (x[j] - x[j - 1]) / (fit[j] - fit[j - 1]);
    return SG_ISO_CROSSING;
}

const char *sg_iso_kind_name(sg_iso_kind_t k)
{
    switch (k) {
    case SG_ISO_CROSSING:
        return "crossing";
    case SG_ISO_AT_LEAST:
        return "at_least";
    case SG_ISO_BELOW:
        return "below";
    default:
        return "none";
    }
}
