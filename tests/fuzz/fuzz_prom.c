/*
 * The Prometheus text parser and the store of scraped series over any bytes. Checks: the parser returns a count
 * or SG_EPROTO with the number of a line that exists; every sample it hands over has a well-formed name and label
 * names, and label values that lie in its scratch; the count equals the samples handed over; feeding the same
 * bytes to the store either keeps them or records one failure; its files' JSON summary builds.
 */
#include "sg_prom.h"
#include "sg_srvmetrics.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

static bool name_ok(sg_slice_t s)
{
    if (s.len == 0)
        return false;
    for (size_t i = 0; i < s.len; i++) {
        char c = s.base[i];
        bool ok =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || (i > 0 && c >= '0' && c <= '9');
        if (!ok)
            return false;
    }
    return true;
}

static int check_sample(void *ud, const sg_prom_sample_t *s)
{
    size_t *n = ud;
    assert(name_ok(s->name));
    assert(s->n_labels <= SG_PROM_MAX_LABELS);
    for (size_t l = 0; l < s->n_labels; l++) {
        assert(name_ok(s->labels[l].name));
        assert(s->labels[l].value.len <= SG_PROM_MAX_LINE);
        if (s->labels[l].value.len)
            (void)*(volatile const char *)&s->labels[l].value.base[s->labels[l].value.len - 1];
    }
    (*n)++;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t n = 0, bad = 0, lines = 1;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    int rc = sg_prom_parse((const char *)data, size, check_sample, &n, &bad);
    if (rc >= 0)
        assert((size_t)rc == n);
    else
        assert(rc == SG_EPROTO && bad >= 1 && bad <= lines);

    const char *url = "http://127.0.0.1/metrics";
    sg_srvm_t *m = sg_srvm_new(&url, 1, 1.0);
    assert(m);
    char err[256];
    int a = sg_srvm_add_scrape(m, 0, 1000, (const char *)data, size, err, sizeof err);
    uint64_t scrapes, failed;
    sg_srvm_counts(m, 0, &scrapes, &failed);
    assert(scrapes == 1 && failed == (a < 0 ? 1u : 0u));
    char *summary = sg_srvm_summary_json(m, 0, 2000);
    assert(summary);
    free(summary);
    sg_srvm_free(m);
    return 0;
}
