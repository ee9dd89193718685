/*
 * One `surge profile` run: the controller (main thread) and the workers it starts.
 *
 * The controller validates the configuration, builds the payload table, resolves the target, starts one pinned
 * worker per core, releases them at one shared start instant, watches progress and SIGINT, joins them, merges
 * their metrics and writes the results. Workers share only read-only data (this struct, the config and the
 * payload table) and a few single-writer counters the controller reads for the progress line.
 */
#ifndef SG_RUN_H
#define SG_RUN_H

#include "sg_config.h"
#include "sg_h2.h"
#include "sg_tcp.h"
#include "sg_tls.h"
#include "sg_tokenizer.h"
#include "sg_workload.h"
#include "sg_conv.h"

#include <stdatomic.h>

/* Why the controller stopped a run (sg_run_t.stop): said in each cancelled request's message. */
typedef enum {
    SG_STOP_NONE = 0,
    SG_STOP_INTERRUPT, /* SIGINT or SIGTERM (or, over several processes, another rank's) */
    SG_STOP_PROBE,     /* a search probe stopped early: an --slo could no longer hold */
    SG_STOP_GRACE,     /* --benchmark-grace-period ran out after --benchmark-duration */
    SG_STOP_ABORT,     /* the run could not start */
    SG_STOP_STABLE,    /* --measurement-interval: the windows were stable (engine/stable.c) */
} sg_stop_why_t;

/*
 * A search probe's per-request bound (engine/search.c): the workers count the measured successful requests whose
 * metric is over it (under it for a floor), so the controller can stop a probe whose percentile SLO can no longer
 * hold. In the metric's recorded unit (ns for times).
 */
typedef struct {
    sg_metric_id_t metric;
    double bound;
    bool floor;  /* larger is better: a request under the bound counts */
    bool strict; /* the SLO excludes the bound itself (< or >): a request at it counts */
} sg_run_bound_t;

typedef struct sg_run {
    const sg_config_t *cfg;
    const sg_payload_table_t *payloads;
    const sg_conv_table_t *convs; /* multi-turn sessions: the conversations (cfg->sessions), else NULL */
    sg_h2_req_t *h2_reqs;         /* HTTP/2: payloads->items[i] in HTTP/2 form; NULL without */
    bool http2;                   /* --http2, or https:// where the preflight's handshake selected h2 */
    sg_tls_opts_t tls_opts;       /* https://: what each worker's client context is made from (ALPN: run->http2's) */
    const sg_tokenizer_t *tok;    /* --tokenizer, NULL without one; read-only, shared */
    const int64_t *schedule_ns;   /* --fixed-schedule: entry i's offset from the start (ns), sorted; else NULL */
    size_t schedule_n;
    sg_addr_t addr;
    char addr_text[64];
    /* several URLs (cfg->n_urls > 1): each one's address, url_addrs[0] the same as addr, and as text; n_urls 1 with
     * one URL (then only addr and addr_text are set) */
    size_t n_urls;
    sg_addr_t url_addrs[SG_MAX_URLS];
    char url_text[SG_MAX_URLS][64];
    bool url_refused[SG_MAX_URLS]; /* the start-up check could not connect to it: the workers start with it out */
    /* --local-address: the source addresses connections are bound to in turn (IP_BIND_ADDRESS_NO_PORT), each checked
     * to be this host's at start-up; NULL / 0 without the flag (the kernel picks the source) */
    sg_addr_t *local_addrs;
    size_t n_local_addrs;
    char *artifact_dir;
    uint64_t nofile;                   /* RLIMIT_NOFILE after raising it */
    int io_backend;                    /* sg_io_backend_t the workers' loops use: io_uring or epoll (sg_loop_pick) */
    unsigned stream_offset;            /* over several processes: this one's workers are global worker streams */
    unsigned streams_total;            /* stream_offset.. of streams_total (0: this process alone) */
    int64_t start_ns;                  /* the shared start instant; written before go is set */
    atomic_int go;                     /* workers wait for it after their set-up */
    atomic_int stop;                   /* an sg_stop_why_t: stop issuing, cancel what is in flight; 0 = go on */
    sg_run_bound_t bounds[SG_SLO_MAX]; /* a search probe's; counted into sg_worker_progress_t.over */
    size_t n_bounds;
    /* a search probe's bounds again, by second of intended start, per worker of this process (how clustered the
     * requests past a bound are: docs/capacity.md, "Clustered evidence"): SG_PROBE_BLOCK(run, worker, bound, second)
     * points at two counts, the requests measured and those past the bound. NULL: not counted */
    uint32_t *blocks;
    /* --cache-bust: request id + uniq_base numbers a request's own prompt words (sg_payload_uniq). It starts at a
     * random value per run (so two runs do not send the same prompts), and each load point of a sweep or search
     * starts past the ids of the points before it, so no point repeats another's prompts */
    uint64_t uniq_base;
    uint64_t point_ids; /* the ids the last point used (the most any worker issued, times the streams) */
} sg_run_t;

/* A probe's seconds counted apart (a later second counts into the last). */
#define SG_PROBE_BLOCKS 600
#define SG_PROBE_BLOCK(blocks, worker, bound, second)                                                                  \
    ((blocks) + ((((size_t)(worker)*SG_SLO_MAX + (bound)) * SG_PROBE_BLOCKS) + (second)) * 2)

/* `surge profile ...`: returns the process exit status. */
int sg_profile_main(int argc, char **argv);

#endif
