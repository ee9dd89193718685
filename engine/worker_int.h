/*
 * Inside the client worker (not a public interface): the types the worker's files share, and the functions
 * they call across. worker.c has the schedule, request lifecycle and thread; worker_conn.c the connections and
 * the HTTP/1.1 exchange; worker_h2.c HTTP/2; worker_resp.c what a response means (parser callbacks, SSE,
 * decoded bodies). Everything here belongs to one worker thread.
 */
#ifndef SURGE_WORKER_INT_H
#define SURGE_WORKER_INT_H

#include "sg_worker.h"

#include "sg_h1.h"
#include "sg_grpc.h"
#include "sg_h2.h"
#include "sg_loop.h"
#include "sg_sched.h"
#include "sg_openai.h"
#include "sg_sse.h"
#include "sg_tls.h"

#include <stdbool.h>
#include <stdint.h>

#define MAX_EVENT_BYTES (1u << 20) /* one SSE event */
#define MAX_BODY_BYTES (16u << 20) /* one non-streamed body */
#define ERR_BODY_SAMPLE 200        /* bytes of an error body kept for the message */
#define SETUP_CONNECT_NS (SG_WORKER_SETUP_WAIT_S * 1000000000LL)
#define FIXED_PREOPEN 4 /* connections opened before a fixed schedule starts, per worker */
/* Connections a worker has being set up (connect, TLS handshake) at once: opening is paced by their completions, so
 * that thousands of connections wanted at once do not go out as one burst of SYNs that overflows the server's accept
 * queue (docs/architecture.md, "Connection opening"). */
#define CONNECT_WINDOW 64
#define TLS_PLAIN_BUF (32u << 10) /* decrypted bytes handed to the protocol per sg_tls_read (a record is <= 16 KiB) */

/* A connection's set-up (connect, TLS handshake) is given up after this, or --request-timeout when shorter. */
#define SETUP_TIMEOUT_MAX_NS 10000000000LL

typedef struct sg_conn sg_conn_t;
typedef struct sg_req sg_req_t;
typedef struct wk_sess wk_sess_t;         /* session.c: one multi-turn session */
typedef struct wk_sessions wk_sessions_t; /* session.c: a worker's sessions */

/*
 * One response being received: HTTP/1.1 connections embed one; HTTP/2 gives each stream its own (from a
 * per-worker free list). The parser callbacks below work on it, whatever the protocol.
 */
typedef struct resp resp_t;
struct wk_grpc_state {
    sg_grpc_dec_t dec;
    sg_grpc_meta_t meta;
};
struct resp {
    sg_worker_t *w;
    sg_req_t *req; /* NULL once the request was finished elsewhere (timeout, cancel) */
    sg_sse_t sse;
    char *body; /* non-streamed body, or the start of an error body */
    size_t body_len;
    size_t body_cap;
    bool event_stream;
    bool complete; /* the parser reported the end of the response */
    resp_t *next_free;
    /* --service-kind triton (worker_grpc.c) */
    bool grpc_body;     /* the head was HTTP 200 with a gRPC content-type: DATA holds gRPC messages */
    bool grpc_stop;     /* a message could not be decoded: the rest of the DATA is ignored */
    uint32_t grpc_msgs; /* response messages received */
    /* the gRPC decoder and call metadata (730 bytes): only a --service-kind triton worker's streams have them, in
     * the same allocation (resp_alloc); NULL on every other response, HTTP/1.1 connections' included */
    struct wk_grpc_state *g;
    /* a multi-turn session's turn is rendered when due, not in the run's table: the stream keeps its own copy of
     * the request (nghttp2 reads the header values and the body from it) until it closes */
    char *turn_bytes;
    sg_h2_req_t turn_req;
};

struct sg_req {
    sg_record_t rec;
    const sg_payload_t *payload;
    sg_conn_t *conn;
    sg_req_t *next;    /* wait queue or free list */
    sg_req_t *fl_prev; /* in-flight list, in send order (so timeouts come in order) */
    sg_req_t *fl_next;
    /* --request-cancellation-rate: chosen for cancellation; armed (in the worker's cancel queue) once its last byte
     * is sent, due at cancel_at_ns */
    bool cancel_planned;
    bool cq_in;
    int64_t cancel_at_ns;
    sg_req_t *cq_prev, *cq_next;
    uint32_t *events; /* content-event times for rec.event_us */
    uint32_t events_cap;
    char *text; /* --tokenizer: output text so far, unescaped */
    uint32_t text_len;
    uint32_t text_cap;
    bool text_lost;         /* over SG_RECORD_TEXT_MAX, a bad escape, or out of memory: no tokenizer count */
    uint32_t reasoning_len; /* text's first bytes that are reasoning (all that came before any answer text) */
    bool reasoning_mixed;   /* reasoning came after answer text: reasoning_len is not all of it */
    uint32_t tool_index_n;  /* chat's tool calls: the highest tool_calls[].index seen plus 1 (0: none) */
    uint32_t tool_text_at;  /* where the tool-call arguments start in text (all that follows, unless tool_mixed) */
    bool tool_text;         /* tool-call arguments went into text */
    bool tool_mixed;        /* answer or reasoning text came after them: the arguments are not text's tail */
    bool tool_only;         /* a whole response whose output is tool calls alone (no text, no reasoning) */
    bool shape_seen;        /* a stream event in the endpoint's own shape came (sg_oai_result_t.recognized) */
    bool in_flight;
    bool refused;          /* failed because the server refused the connection or reset it before any response */
    uint8_t slot_refusals; /* closed loop: such failures in a row of this request's slot before it */
    bool retried;          /* re-sent once, on a fresh connection, after a kept-alive one turned out closed */
    bool url_picked;       /* several URLs: rec.url is chosen (worker_url.c) */
    uint8_t h2_resends;    /* HTTP/2: times re-sent after the server refused the stream or sent GOAWAY below it */
    resp_t *rs;            /* --http2: the stream's response */
    int32_t stream_id;
    /* a turn of a multi-turn session (session.c): payload points at turn_payload, rendered for this turn */
    wk_sess_t *sess;
    sg_payload_t turn_payload;
    /* --cache-bust first_turn_prefix: this request's words for its payload's slot (payload->uniq_len bytes), sent
     * in place of the table's template (sg_payload_uniq) */
    char uniq[SG_UNIQ_MAX];
};

enum conn_state { C_CONNECTING, C_IDLE, C_BUSY, C_CLOSING };

struct sg_conn {
    sg_op_t connect_op;
    sg_op_t send_op;
    sg_op_t recv_op;
    sg_worker_t *w;
    int fd;
    enum conn_state state;
    unsigned ops; /* operations in flight; the conn is freed when closing and this reaches 0 */
    bool recv_armed;
    bool for_setup;    /* opened before the start instant */
    int64_t opened_ns; /* set-up (connect, TLS handshake) is given up at opened_ns + w->setup_timeout_ns */
    resp_t rs;         /* HTTP/1.1: the response of the request on this connection (rs.req) */
    size_t send_off;
    struct msghdr send_msg; /* a payload with a slot: its bytes around the request's own words (conn_send) */
    struct iovec send_iov[3];
    sg_h1_resp_t h1;
    uint64_t served; /* responses completed on this connection; 0: fresh, it never carried a request */
    /* what the server's Keep-Alive header said (worker_conn.c: keep_alive_hints) */
    uint64_t ka_limit;     /* requests it lets this connection carry; UINT64_MAX: it did not say */
    int64_t ka_idle_ns;    /* idle longer than this, it is not reused; INT64_MAX: the server named no timeout */
    int64_t idle_since_ns; /* when it last went idle */
    /* https://: the TLS filter; the connection stays C_CONNECTING until its handshake is done */
    sg_tls_conn_t *tls;
    bool tls_sending; /* ciphertext from sg_tls_out_peek is in flight on send_op */
    bool unsent;      /* HTTP/1.1: the request's last byte has not left yet (its sent_ns is provisional) */
    bool last_stream; /* HTTP/1.1: the last response it carried was an event stream (the reuse policy's kind) */
    /* --http2 */
    sg_h2_t *h2;
    char *wbuf; /* bytes being sent (wlen), sent up to woff */
    size_t wlen, wcap, woff;
    bool sending;
    bool h2_lost;            /* the connection broke: its streams end as disconnects (or are re-sent) */
    bool h2_goaway;          /* the server sent GOAWAY: streams up to its last-stream-id may have been processed */
    uint32_t h2_goaway_code; /* its error code (0: NO_ERROR, graceful) */
    int lost_res;
    size_t h2v_idx;        /* 1 + index in the worker's usable HTTP/2 connections; 0 when not there */
    sg_conn_t *dirty_next; /* conns with frames to flush after a dispatch */
    bool dirty;
    sg_conn_t *next; /* idle list (w->idle_head, or w->idle_fresh_head while served is 0) */
    sg_conn_t *prev;
    sg_conn_t *all_next; /* every connection of the worker, for the final clean-up */
    sg_conn_t *all_prev;

    /* HTTP trace (wk_trace_conn): when the TCP connect completed and when set-up was done (over TLS: the handshake),
     * 0 before; whether those went into the record of the first request it carried */
    int64_t connected_ns;
    int64_t ready_ns;
    bool setup_traced;
    uint8_t url; /* several URLs: the index of the one it is connected to */
};

/* A closed-loop slot waiting out its back-off (worker.c): its next request is due then. */
struct wk_backoff {
    int64_t due_ns;
    uint32_t refusals; /* the slot's refused requests in a row */
};

struct sg_worker {
    sg_run_t *run;
    const sg_config_t *cfg;
    unsigned index, n;
    int cpu;
    pthread_t thread;
    bool started;
    sg_loop_t loop;
    sg_oai_memo_t oai_memo; /* stream events decoded in one compare when shaped as the last (sg_oai_decode_memo) */

    /* schedule */
    sg_sched_t sched;
    double rate; /* this worker's share of the request rate; 0 = closed loop */
    int64_t next_arrival_ns;
    uint64_t quota; /* requests this worker issues, warmup included; UINT64_MAX = until the duration */
    uint64_t warmup_quota;
    uint64_t issued;
    int64_t stop_issue_ns; /* INT64_MAX until the measured phase starts with a duration */
    sg_win_count_t *win;   /* --measurement-interval: n_win windows of win_ns from win_origin_ns; NULL without */
    uint32_t n_win;
    int64_t win_ns, win_origin_ns;
    uint32_t slots;         /* closed loop */
    uint32_t max_in_flight; /* 0 = no cap */
    bool issuing_done;
    /* ramps: requests intended before ramp_end_ns are marked; --concurrency-ramp-duration opens this worker's
     * slots (global slots index, index + n, ...) one by one, slots_open of them so far */
    int64_t ramp_end_ns;
    uint32_t slots_open;
    /* --request-cancellation-rate: a request is chosen when its hash is below cancel_below; the armed ones in
     * arming order (one delay for all, so in deadline order, up to the microseconds by which send stamps of
     * one batch of completions can disagree with it) */
    uint64_t cancel_below;
    int64_t cancel_delay_ns;
    sg_req_t *cq_head, *cq_tail;

    /* requests */
    sg_req_t *free_reqs;
    sg_req_t *wait_head, *wait_tail;
    uint64_t n_waiting;
    /*
     * HTTP/1.1 re-sends: requests that got no byte of response on a reused connection. They wait here, ahead of
     * the queue above, for a connection that never carried a request (one opened for them, or a fresh idle one):
     * the next reused connection is likely closed too (llama-server closes every connection after a streamed
     * response), and a second loss would be an error the server never caused.
     */
    sg_req_t *fresh_head, *fresh_tail;
    uint64_t n_fresh;
    sg_req_t *fl_head, *fl_tail;
    uint64_t n_in_flight;
    int64_t timeout_ns;
    /* Coalesced wake-ups (worker.c, coalesce_window): the longest window (--coalesce-us; 0 = off), and over the
     * requests finished so far (an average over about the last 16; 0 before the first) their sent-to-end time and
     * the mean gap between a request's content events (that time over their count) */
    int64_t coalesce_ns;
    int64_t e2e_avg_ns, gap_avg_ns;
    /* Receive times are the kernel's stamps (issue 22's receive path sets it once its loop is up), so holding a
     * completion does not move them: what --coalesce-us auto needs to turn the window on */
    bool rx_kernel_times;
    const char *coalesce_method; /* sg_loop_coalesce_method, read once the loop is up */

    /* connections, per URL (several URLs: -u given more than once; else only [0]) */
    sg_conn_t *idle_head[SG_MAX_URLS];       /* idle after a response, most recent first */
    sg_conn_t *idle_fresh_head[SG_MAX_URLS]; /* idle and never used: the ones re-sends may take */
    sg_conn_t *all_head;
    uint64_t n_conns;
    uint64_t n_connecting;
    uint64_t n_closing; /* closed, their descriptors held until the ring returns their operations */
    uint64_t max_conns;
    int last_connect_err;
    size_t next_src; /* --local-address: index of the source address the next connection is bound to */
    uint64_t conns_opened, conns_peak, connect_failures, resent, resent_measured;
    /*
     * HTTP/1.1 servers that close kept-alive connections right after a response without saying so (llama-server
     * after every streamed one), per kind of that response: [0] a whole answer, [1] an event stream. After
     * SG_SILENT_CLOSE_LIMIT such closes in a row, connections are not pooled after responses of that kind for the rest
     * of the run (worker_conn.c, note_silent_close).
     */
    uint8_t silent_streak[2];
    bool no_reuse_after[2];
    int64_t silent_first_ns[2]; /* when the first close of the current streak was seen (the worker's clock) */
    int64_t ka_probe_at[2];     /* learnt from closes that came all at once: one reuse tried from then (0: none) */
    uint64_t silent_closes;
    uint64_t ka_relearned; /* times the learning above was reset when the server accepted connections again */
    /*
     * The server unreachable (worker.c, wk_note_unreachable, called from worker_conn.c): a window from the first failed
     * connect to the next one that succeeds. Closed loop: a refused request's slot backs off (worker.c) before its next
     * request; the slots waiting sit in a min-heap by due time.
     */
    int64_t unreach_start_ns; /* the open window's start; 0: none open */
    uint64_t unreach_refused, unreach_waiting, refused_total;
    sg_unreach_win_t unreach[SG_UNREACH_WINDOWS_MAX];
    uint32_t n_unreach;
    uint64_t unreach_dropped;
    struct wk_backoff *backoff;
    uint32_t n_backoff, backoff_cap;
    uint8_t issue_refusals; /* the slot refusals of the closed-loop request being issued (new_request) */
    uint64_t backoffs;
    int64_t setup_timeout_ns; /* sg_worker_setup_timeout_s */
    int64_t setup_check_ns;   /* no connection's set-up is due before this (INT64_MAX: none being set up) */
    uint64_t bytes_received;  /* published in progress.bytes_received */
    /*
     * Receive times (docs/metrics.md, "Timestamps"): with kernel stamps on (loop.rx_stamps, --timestamps kernel)
     * each read's time is the kernel's receive stamp; reads without one (the first segments after stamping is
     * switched on, or sockets that refused it) fall back to the clock read at the callback, and are counted.
     */
    uint64_t rx_stamped, rx_unstamped;
    uint64_t stamp_refused;    /* connections whose SO_TIMESTAMPING was refused */
    uint64_t clock_steps;      /* CLOCK_REALTIME moved against CLOCK_MONOTONIC by more than CLOCK_STEP_NS */
    int64_t clock_step_max_ns; /* the largest of those moves, absolute */
    int64_t clock_check_ns;    /* when the offset is read again */
    uint64_t events_shared;    /* wk_events_shared of this worker's thread, once it is done */

    /* https:// (NULL for http://): this worker's context, where reconnects find their sessions to resume */
    sg_tls_ctx_t *tls_ctx;
    char *tls_buf; /* TLS_PLAIN_BUF bytes: plaintext out of sg_tls_read */
    uint64_t tls_full, tls_resumed, tls_failures;

    /* HTTP/2: --http2, or h2 selected through ALPN by the run's first handshake (the preflight) */
    bool http2;
    bool grpc;                  /* --service-kind triton: streams carry gRPC calls (worker_grpc.c) */
    struct sg_kserve_dec *kdec; /* decodes KServe responses; created on first use */
    int64_t drain_ns;           /* the clock read for requests leaving in the drain under way; 0 = not read yet */
    sg_conn_t **h2v;            /* connected sessions that may take streams */
    size_t h2n, h2cap;
    sg_conn_t *dirty_head; /* sessions with frames to flush */
    resp_t *free_resps;
    uint32_t h2_per_conn;  /* streams a connection takes: the peer's last SETTINGS_MAX_CONCURRENT_STREAMS */
    char h2_lost_why[160]; /* nghttp2's reason while a broken session's streams end (wk_h2_conn_lost) */
    uint64_t h2_streams_peak, h2_goaways, h2_refused_resent, h2_resets;

    wk_sessions_t *sess; /* multi-turn sessions (session.c); NULL for every other run */

    /*
     * Several URLs (worker_url.c; docs/metrics.md, "Several URLs"): a request gets its URL when it is queued (round
     * robin, or the fewest in flight and waiting), and waits for a connection to that URL. A URL whose connect fails
     * is out of rotation until down_until (a back-off doubling from URL_BACKOFF_MIN_MS), its waiting requests
     * re-routed to the others; a connect that succeeds puts it back.
     */
    unsigned n_urls; /* run->n_urls */
    unsigned url_next;
    uint64_t url_waiting[SG_MAX_URLS];    /* in the wait and re-send queues */
    uint64_t url_in_flight[SG_MAX_URLS];  /* sent, not finished */
    uint64_t url_connecting[SG_MAX_URLS]; /* connections being set up */
    int64_t url_down_until[SG_MAX_URLS];  /* 0: in rotation */
    uint32_t url_down_streak[SG_MAX_URLS];
    sg_url_stats_t url_stats[SG_MAX_URLS];

    sg_metrics_t *metrics;
    bool keep_text; /* --tokenizer: keep output text, defer measured records' metrics to the post-run pass */
    bool no_output; /* the endpoint generates nothing (embeddings, rankings): every record says so */
    sg_reclog_t *log;
    char log_path[4096];
    uint64_t records_dropped; /* by the record log: its writer was behind (set when the thread ends) */
    int log_err;              /* writing or closing the record log failed (-errno): its records are not whole */
    uint64_t warmup_done;
    int fatal;
    char fatal_msg[4400];

    /* client stalls (--stall-threshold-ms): the loop's lateness against when it was due to turn */
    int64_t stall_bound_ns;  /* 0: not watched */
    int64_t due_ns;          /* the deadline of the loop's latest wait (INT64_MAX before the first) */
    bool stall_open;         /* stall_cur is a window not closed yet */
    int64_t stall_caught_ns; /* open window: when its latest late turn had done what was due */
    sg_stall_win_t stall_cur;
    uint32_t n_stalls;
    uint64_t stalls_dropped;
    sg_stall_win_t stalls[SG_STALL_WINDOWS_MAX];

    sg_worker_progress_t progress;
};

/* Receive time of the completion being handled: every event in one read shares it (see docs/metrics.md). */
extern __thread int64_t wk_t_recv_ns;
/* Content events that shared their time with the one before of the same response: the kernel stamps a read, not
 * each segment, so events that arrived apart but were read together carry the last one's arrival. */
extern __thread uint64_t wk_events_shared;

/* A read's receive time: the kernel's stamp, or (none came) the clock now, counted as such. */
static inline int64_t wk_read_time(sg_worker_t *w, const sg_ev_t *ev)
{
    if (SG_LIKELY(ev->t_ns)) {
        w->rx_stamped++;
        return ev->t_ns;
    }
    if (w->loop.rx_stamps)
        w->rx_unstamped++;
    return sg_now_ns();
}

/* The request's first response byte came at t. No answer precedes its question: a send time read after the
 * kernel call that sent it can be later than the stamp of a very quick answer, and gives way to it. */
static inline void wk_first_byte(sg_req_t *r, int64_t t)
{
    r->rec.first_byte_ns = t;
    if (t < r->rec.sent_ns)
        r->rec.sent_ns = t;
}

/* The request's last byte left at t (a send completion's time; 0: unknown, the provisional time stays). */
static inline void wk_mark_sent(sg_req_t *r, int64_t t)
{
    if (!t)
        return;
    r->rec.sent_ns = r->rec.first_byte_ns && r->rec.first_byte_ns < t ? r->rec.first_byte_ns : t;
}

/* worker.c: the cancellation test's timer, armed when r's last byte left at t (0: unknown, now) */
void wk_cancel_arm(sg_worker_t *w, sg_req_t *r, int64_t t);

/* worker.c: requests */
void wk_set_error(sg_req_t *r, sg_err_class_t cls, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void wk_fl_append(sg_worker_t *w, sg_req_t *r);
void wk_fl_remove(sg_worker_t *w, sg_req_t *r);
void wk_wait_push(sg_worker_t *w, sg_req_t *r);
/* When --benchmark-duration stops a worker issuing, its measured window starting with the request intended at first
 * (warmed_up: after a warmup). */
int64_t wk_window_end(const sg_worker_t *w, int64_t first, bool warmed_up);
sg_req_t *wk_wait_pop(sg_worker_t *w);
/* Back at the front of the queue (HTTP/2: a stream refused, or not taken by its session), keeping its intended time. */
void wk_wait_push_front(sg_worker_t *w, sg_req_t *r);
void wk_fresh_push(sg_worker_t *w, sg_req_t *r);
sg_req_t *wk_fresh_pop(sg_worker_t *w);
/* The request a failed connection attempt was opened for: a re-send first (they wait longest), else the queue's
 * head. NULL when none waits. */
sg_req_t *wk_wait_pop_opened_for(sg_worker_t *w);
void wk_req_finish(sg_worker_t *w, sg_req_t *r, int64_t now);
void wk_issue_closed(sg_worker_t *w, int64_t intended);
/* Closed loop: a slot is free at now; refusals > 0: it ended on that many refused requests in a row, and backs off
 * before its next request (else the next is issued at once). */
void wk_slot_free(sg_worker_t *w, int64_t now, uint32_t refusals);
/* A request slot with the fields every request has (id, worker, intended, the -1s), or NULL (w->fatal set). */
sg_req_t *wk_req_new(sg_worker_t *w, int64_t intended);
/* A finished record into the worker's counts, metrics and record log (wk_req_finish's accounting; session.c also
 * gives it the records of turns that were never sent). */
void wk_record_done(sg_worker_t *w, sg_record_t *rec);

/* session.c: multi-turn sessions (docs/sessions.md). Only called when w->sess is set. */
int wk_sess_init(sg_worker_t *w, char *err, size_t errlen);
void wk_sess_free(sg_worker_t *w);
/* Start a session whose first turn is intended at `intended`; false when no more may start (the count is spent). */
bool wk_sess_start(sg_worker_t *w, int64_t intended);
/* Turn r finished (its record logged): keep the reply and plan the next turn, or end the session. */
void wk_sess_turn_done(sg_worker_t *w, sg_req_t *r);
/* Send the turns whose delay is over; the earliest still to come (INT64_MAX: none). */
void wk_sess_due(sg_worker_t *w, int64_t now);
int64_t wk_sess_next_due(const sg_worker_t *w);
/* The run stops: sessions waiting for a turn's delay end, their remaining turns counted as cancelled. */
void wk_sess_cancel(sg_worker_t *w, int64_t now);

/* worker_resp.c: response meaning */
int wk_body_append(resp_t *c, const char *data, size_t len, size_t cap_limit);
void wk_apply_decoded(sg_req_t *r, const sg_oai_result_t *res);
void wk_capture_text(sg_worker_t *w, sg_req_t *r, const sg_oai_result_t *res);
void wk_capture_bytes(sg_worker_t *w, sg_req_t *r, sg_slice_t text);
int wk_add_content_event(sg_req_t *r, int64_t t);
int wk_on_head(void *ud, const sg_h1_resp_head_t *head);
int wk_on_body(void *ud, const char *data, size_t len);
int wk_on_complete(void *ud);
extern const sg_h1_resp_cb_t wk_h1_cb;

/* worker_url.c: several URLs. A queued request's URL (picked once; again when its URL left the rotation), the
 * counts kept per URL as requests are queued, sent and finished, and a URL's failed and successful connects. */
void wk_url_queued(sg_worker_t *w, sg_req_t *r);
void wk_url_unqueued(sg_worker_t *w, const sg_req_t *r);
/* A connect to URL u failed with err at now: true when u left the rotation and its waiting requests went to other
 * URLs (the caller then fails none of them); false with one URL, or when every URL is out. */
bool wk_url_failed(sg_worker_t *w, unsigned u, int err, int64_t now);
void wk_url_connected(sg_worker_t *w, unsigned u, int64_t now);
/* The URL connections should be opened to next for queued requests, and how many are wanted for it (0: none). */
unsigned wk_url_want(const sg_worker_t *w, uint64_t *want);
void wk_url_end(sg_worker_t *w, int64_t now);
/* The URLs the start-up check could not connect to start out of rotation. */
void wk_url_init(sg_worker_t *w);
/* The URL the next connection opened before the start goes to: the URLs in rotation in turn. */
unsigned wk_url_setup_next(sg_worker_t *w);

/* worker_conn.c: connections (the unreachable window's functions below are worker.c's) */
void wk_idle_push(sg_worker_t *w, sg_conn_t *c);
void wk_idle_remove(sg_worker_t *w, sg_conn_t *c);
/* A connection to URL url (0 with one URL), opened ahead of the start (for_setup) or for queued requests. */
sg_conn_t *wk_conn_open(sg_worker_t *w, bool for_setup, unsigned url);
void wk_conn_close(sg_conn_t *c);
void wk_conn_put(sg_conn_t *c);
void wk_conn_dispatch(sg_worker_t *w);
void wk_conns_free_all(sg_worker_t *w);
/* Give up connections whose set-up is past w->setup_timeout_ns (call when now reaches w->setup_check_ns). */
void wk_conns_expire_setup(sg_worker_t *w, int64_t now);
void wk_fail_waiting_head(sg_worker_t *w, int err);
/* HTTP trace: request r starts on connection c at now: its send start, and the connection's set-up times when it is
 * the first request c carries (else marked reused). */
void wk_trace_conn(sg_req_t *r, sg_conn_t *c, int64_t now);
/* err (-errno) is the server turning a connection down (refused, reset, unreachable), not the client running out of
 * something: a closed loop backs off after it */
bool wk_refusal(int err);
/* A connection attempt failed with err (-errno) at now / one succeeded: open, count, close the unreachable window
 * (only errors that are the server's or the network's: refused, reset, unreachable, timed out); the keep-alive
 * learning starts over when the server accepts connections again. */
void wk_note_unreachable(sg_worker_t *w, int err, int64_t now);
void wk_note_reachable(sg_worker_t *w, int64_t now);
/* The worker stops: an open window ends here, not recovered. */
void wk_unreach_end(sg_worker_t *w, int64_t now);
/* Closed loop, worker.c: the most requests and backed-off slots waiting at once in the open window */
void wk_unreach_peak(sg_worker_t *w);
int wk_conn_send(sg_conn_t *c, const void *p, size_t n);

/* worker_h2.c: HTTP/2 */
int wk_h2_conn_ready(sg_conn_t *c);
void wk_h2_conn_release(sg_conn_t *c);
void wk_h2_conn_lost(sg_conn_t *c, int res);
void wk_h2v_remove(sg_worker_t *w, sg_conn_t *c);
void wk_h2_handle_data(sg_conn_t *c, const char *data, size_t len);
void wk_h2_on_sent(sg_conn_t *c, int res);
/* sg_loop's before_submit: write every dirty session (arg: the worker) */
void wk_h2_before_submit(void *arg);
void wk_h2_dispatch(sg_worker_t *w);
bool wk_h2_awaiting_settings(const sg_worker_t *w);
void wk_h2_abandon(sg_req_t *r);
void wk_h2_free_all(sg_worker_t *w);

/* worker_grpc.c: --service-kind triton, per HTTP/2 stream */
void wk_grpc_resp_reset(resp_t *rs);
void wk_grpc_resp_free(resp_t *rs);
int wk_grpc_on_field(void *ud, void *stream_ud, const char *name, size_t name_len, const char *value, size_t value_len,
                     bool trailer);
int wk_grpc_on_head(resp_t *rs, int status);
int wk_grpc_on_data(resp_t *rs, const char *data, size_t len);
void wk_grpc_on_complete(resp_t *rs);
void wk_grpc_free_all(sg_worker_t *w);

#endif
