/*
 * A client worker: one thread, pinned, with its own event loop (io_uring or epoll), connections, arrival stream,
 * metrics and record log. Nothing here is shared with other workers while the run is on; the controller reads only the
 * progress counters (single writer, relaxed atomics) and everything else after the join.
 */
#ifndef SG_WORKER_H
#define SG_WORKER_H

#include "sg_run.h"
#include "sg_metrics.h"

#include <pthread.h>
#include <stdatomic.h>

typedef struct sg_worker sg_worker_t;

/*
 * What the controller reads while the run is on (progress line, the watch on a silent server): one writer each,
 * the worker, relaxed. completed, errors, in_flight and warmup_done change with each request; the rest are
 * published once per loop iteration.
 */
typedef struct {
    _Alignas(SG_CACHELINE) atomic_uint_fast64_t completed; /* measured requests finished: ok, failed, cancelled */
    atomic_uint_fast64_t errors;                           /* measured requests failed (cancelled ones are not) */
    atomic_uint_fast64_t cancelled;                        /* measured requests surge cancelled (run->stop) */
    atomic_uint_fast64_t in_flight;
    atomic_uint_fast64_t warmup_done;
    atomic_uint_fast64_t waiting;          /* issued requests not yet sent (no connection or stream free yet) */
    atomic_uint_fast64_t connecting;       /* connections being set up (TCP connect, TLS handshake) */
    atomic_uint_fast64_t bytes_received;   /* from the server, every connection, since the start of set-up */
    atomic_int issuing_done;               /* no more requests will be issued (count, duration, or stop) */
    atomic_uint setup_opened;              /* connections opened before the start instant (valid once ready) */
    atomic_uint setup_pending;             /* of those, not set up when set-up ended (valid once ready) */
    atomic_int ready;                      /* set-up finished (connections pre-opened) */
    atomic_uint_fast64_t over[SG_SLO_MAX]; /* measured requests on the wrong side of run->bounds[i] */
    atomic_int finished;
    /* The client-stall watch (--stall-threshold-ms; docs/metrics.md, Client stalls), CLOCK_MONOTONIC ns: */
    atomic_int_fast64_t beat_ns;        /* the top of the loop's latest turn */
    atomic_int_fast64_t due_ns;         /* when the loop is due to turn again (INT64_MAX: not running the load) */
    atomic_int_fast64_t stall_since_ns; /* the open stall window's start; 0: none open */
    atomic_int_fast64_t stall_lag_ns;   /* its largest lateness so far */
    atomic_uint stalls_n;               /* windows closed; sg_worker_stalls' first stalls_n are final (release) */
    /* The server unreachable (docs/metrics.md, Server unreachable), CLOCK_MONOTONIC ns: */
    atomic_int_fast64_t unreach_since_ns; /* the open window's start (its first failed connect); 0: none open */
    atomic_uint_fast64_t refused;         /* connection attempts that failed, every window, since the start */
    atomic_uint_fast64_t backing_off;     /* closed loop: slots waiting out a back-off now */
    atomic_uint unreach_n;                /* windows closed; sg_worker_unreachable's first unreach_n are final */
    /* Stability windows (--measurement-interval; engine/stable.c), CLOCK_MONOTONIC ns: */
    atomic_int_fast64_t win_origin_ns; /* where this worker's windows start (its measured phase); 0: not yet */
    atomic_int_fast64_t issued_to_ns;  /* every request intended before this was issued (release, per turn) */
} sg_worker_progress_t;

/*
 * One stability window's counts in one worker (single writer, relaxed; engine/stable.c reads them live): the
 * measured requests intended in [origin + k I, origin + (k + 1) I), issued and finished (ok, failed or cancelled),
 * and of the successful ones the count and the sum of their request latencies.
 */
typedef struct {
    atomic_uint_fast64_t issued, done, ok;
    atomic_uint_fast64_t cancelled;  /* of the finished, those surge cancelled (the run stopped) */
    atomic_uint_fast64_t latency_ns; /* sum over the ok ones: request_latency */
} sg_win_count_t;
/* The worker's window counts (*n of them; NULL without --measurement-interval). */
const sg_win_count_t *sg_worker_windows(const sg_worker_t *w, uint32_t *n);

/* A client stall: from start_ns, when the worker's loop was due and did not turn, to end_ns, when its last late turn
 * began (that turn issued everything due by then); max_lag_ns the largest lateness in between; requests, those the
 * worker issued in it, which are those due in it (warmup ones included). */
typedef struct {
    int64_t start_ns, end_ns, max_lag_ns;
    uint64_t requests;
} sg_stall_win_t;
/* Windows a worker keeps; later ones are counted (sg_worker_stalls' dropped), not kept */
#define SG_STALL_WINDOWS_MAX 256
/* The worker's closed stall windows. While it runs, read progress.stalls_n (acquire) first: the first that many
 * entries are final. After the join, *dropped (when not NULL) is how many were not kept. */
const sg_stall_win_t *sg_worker_stalls(const sg_worker_t *w, uint64_t *dropped);

/* A window in which the server did not accept this worker's connections: from its first failed connect (refused,
 * unreachable, reset) to the next connect that succeeded (end_ns; recovered false: the run ended first, end_ns is
 * then when the worker stopped). refused: the attempts that failed in it; waiting: the most of the worker's requests
 * and backed-off slots that waited at once. */
typedef struct {
    int64_t start_ns, end_ns;
    uint64_t refused, waiting;
    bool recovered;
} sg_unreach_win_t;
/* Windows a worker keeps; later ones are counted (sg_worker_unreachable's dropped), not kept */
#define SG_UNREACH_WINDOWS_MAX 64
/* The worker's closed windows. While it runs, read progress.unreach_n (acquire) first; after the join every window is
 * closed, and *dropped (when not NULL) is how many were not kept. */
const sg_unreach_win_t *sg_worker_unreachable(const sg_worker_t *w, uint64_t *dropped);

/* Closed loop: a slot whose request found the server refusing connections (or resetting them before any response)
 * waits BACKOFF_MIN, doubling for each such failure in a row, at most BACKOFF_MAX, before its next request. */
#define SG_BACKOFF_MIN_MS 10
#define SG_BACKOFF_MAX_MS 1000

/* A connection not set up (TCP connect, TLS handshake) this long after it was opened is given up: 10 s, or
 * --request-timeout when that is shorter, since a request waiting for it should not outwait its own timeout. */
double sg_worker_setup_timeout_s(const sg_config_t *cfg);
/* How long the workers wait, before the start instant, for the connections they open in advance. */
#define SG_WORKER_SETUP_WAIT_S 3

/*
 * Create worker `index` of `n` (not started). Its share of counts and rates is derived from run->cfg.
 * NULL on OOM, with a message in err.
 */
SG_WUR sg_worker_t *sg_worker_new(sg_run_t *run, unsigned index, unsigned n, int cpu, char *err, size_t errlen);
/* Start the thread. 0 or -errno. */
SG_WUR int sg_worker_start(sg_worker_t *w);
/* Make the worker notice run->stop now (thread-safe). */
void sg_worker_wake(sg_worker_t *w);
/* Join the thread. Returns the worker's fatal error (0 when it ran to the end), with text in err. */
int sg_worker_join(sg_worker_t *w, char *err, size_t errlen);
const sg_worker_progress_t *sg_worker_progress(const sg_worker_t *w);
/* After the join: the worker's metrics, record-log path and measured-request total. */
sg_metrics_t *sg_worker_metrics(sg_worker_t *w);
const char *sg_worker_log_path(const sg_worker_t *w);
uint64_t sg_worker_warmup_count(const sg_worker_t *w);

/* Unannounced closes right after a response, in a row, before a worker stops reusing connections after such responses
 * (worker_conn.c) */
#define SG_SILENT_CLOSE_LIMIT 3

/* After the join: what the worker did, for --verbose. */
typedef struct {
    int cpu;
    uint64_t issued; /* requests issued, warmup included */
    uint64_t conns_opened;
    uint64_t conns_peak; /* most connections open at once */
    uint64_t connect_failures;
    uint64_t resent;          /* requests re-sent once after a kept-alive connection turned out closed */
    uint64_t resent_measured; /* measured requests sent more than once (either re-send above, or HTTP/2's) */
    uint64_t silent_closes;   /* kept-alive connections the server closed right after a response, unannounced */
    bool no_reuse_after_whole, no_reuse_after_stream; /* the worker stopped pooling connections after those */
    uint64_t ka_relearned;                            /* keep-alive learning reset after a server outage */
    uint64_t backoffs;                                /* closed loop: slot back-offs after a refused attempt */
    /* --http2 */
    uint64_t h2_streams_peak;   /* most streams open at once on one connection */
    uint64_t h2_goaways;        /* GOAWAY frames received */
    uint64_t h2_refused_resent; /* streams refused (REFUSED_STREAM, above GOAWAY's last id) and re-sent */
    uint64_t h2_resets;         /* streams the server reset (RST_STREAM) */
    /* https:// */
    uint64_t tls_full;        /* handshakes that ran in full */
    uint64_t tls_resumed;     /* handshakes that resumed a session of an earlier connection */
    uint64_t tls_failures;    /* handshakes that failed */
    uint64_t records_dropped; /* per-request records the record log dropped: its writer was behind */
    int log_err;              /* the record log could not be written (-errno; 0: it is whole) */
    /* receive times (--timestamps): reads that carried the kernel's stamp, reads that fell back to the clock */
    bool rx_stamps; /* kernel stamps were asked for */
    uint64_t rx_stamped, rx_unstamped;
    uint64_t stamp_refused;    /* connections whose SO_TIMESTAMPING was refused */
    uint64_t clock_steps;      /* CLOCK_REALTIME steps seen during the run */
    int64_t clock_step_max_ns; /* the largest, absolute */
    uint64_t events_shared;    /* content events that shared their read's time with the one before */
    /* the event loop from the start instant on (sg_loop_t's counts): its turns, those that waited (the others
     * polled), the completions they handed over, the turns that coalesced (--coalesce-us) and their windows' sum */
    uint64_t loop_turns, loop_waits, loop_completions, loop_coalesced, loop_coalesced_ns;
    const char *coalesce_method; /* sg_loop_coalesce_method; NULL when the loop never came up */
    uint32_t coalesce_us;        /* the window's bound this worker used (--coalesce-us, auto resolved) */
} sg_worker_stats_t;
void sg_worker_stats(const sg_worker_t *w, sg_worker_stats_t *out);

/* Several URLs, after the join: what one worker saw of URL u (docs/metrics.md, Several URLs). */
typedef struct {
    uint64_t connect_failures; /* connects refused, reset or timed out */
    uint64_t rerouted;         /* requests meant for it that went to another URL while it was out of rotation */
    uint64_t outages;          /* times it was taken out of rotation (a failed connect while it was in) */
    int64_t first_down_ns;     /* the first of those; 0: never */
    int64_t last_up_ns;        /* the last connect that succeeded after an outage; 0: none */
    bool down_at_end;          /* out of rotation when the worker stopped */
} sg_url_stats_t;
void sg_worker_url_stats(const sg_worker_t *w, size_t u, sg_url_stats_t *out);
void sg_worker_free(sg_worker_t *w);

#endif
