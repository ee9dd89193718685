/*
 * The mock's server model (--max-batch, --prefill-ms-per-token): at most B sequences are generated at once and
 * the rest wait in one FIFO shared by every worker thread, so that the mock has a capacity known in advance
 * (docs/mock.md). A request's service time is known when it arrives (its TTFT, with the prefill of its prompt,
 * then one token per ITL), so the queue is simulated exactly at admission: the request takes the slot that frees
 * first, starts when it frees (or at once), and holds it until its last token is due. Nothing has to release a
 * slot later, so none can leak: a request the client abandons keeps its slot to its planned end, as a server that
 * notices the disconnect only when it next writes.
 */
#include "mock_internal.h"

#include <stdlib.h>

struct sg_mock_batch {
    pthread_mutex_t mu;
    uint32_t n;
    int64_t *free_at; /* when each slot is free again */
    uint64_t admitted, waited;
    int64_t max_wait_ns;
    double sum_wait_ns;
};

sg_mock_batch_t *sg_mock_batch_new(uint32_t slots)
{
    sg_mock_batch_t *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    if (!(b->free_at = calloc(slots, sizeof(*b->free_at)))) {
        free(b);
        return NULL;
    }
    b->n = slots;
    pthread_mutex_init(&b->mu, NULL);
    return b;
}

void sg_mock_batch_free(sg_mock_batch_t *b)
{
    if (!b)
        return;
    pthread_mutex_destroy(&b->mu);
    free(b->free_at);
    free(b);
}

/* FIFO by arrival: the earliest-free slot; a linear scan, B being a batch size (tens to hundreds). */
static int64_t admit(sg_mock_batch_t *b, int64_t now, int64_t service_ns)
{
    pthread_mutex_lock(&b->mu);
    uint32_t best = 0;
    for (uint32_t i = 1; i < b->n; i++)
        if (b->free_at[i] < b->free_at[best])
            best = i;
    int64_t start = b->free_at[best] > now ? b->free_at[best] : now;
    b->free_at[best] = start + service_ns;
    b->admitted++;
    if (start > now) {
        b->waited++;
        b->sum_wait_ns += (double)(start - now);
        if (start - now > b->max_wait_ns)
            b->max_wait_ns = start - now;
    }
    pthread_mutex_unlock(&b->mu);
    return start;
}

void sg_mock_job_schedule(const sg_mock_server_t *s, sg_mock_job_t *j, int64_t now, unsigned worker)
{
    j->ttft_ns = s->ttft_ns + (int64_t)(s->opts.prefill_ms_per_token * 1e6 * (double)j->usage_prompt);
    j->start_ns = now;
    if (s->batch)
        j->start_ns = admit(s->batch, now, j->ttft_ns + s->itl_ns * (int64_t)(j->n > 0 ? j->n - 1 : 0));
    if (s->load)
        sg_mock_load_add(s->load, worker, j, s->itl_ns, now);
}

void sg_mock_batch_stats(sg_mock_batch_t *b, uint64_t *admitted, uint64_t *waited, double *mean_wait_ms,
                         double *max_wait_ms)
{
    pthread_mutex_lock(&b->mu);
    *admitted = b->admitted;
    *waited = b->waited;
    *mean_wait_ms = b->waited ? b->sum_wait_ns / (double)b->waited / 1e6 : 0;
    *max_wait_ms = (double)b->max_wait_ns / 1e6;
    pthread_mutex_unlock(&b->mu);
}
