/*
 * Multi-turn sessions on the client worker (docs/sessions.md). A session plays one conversation of the run's
 * table (sg_conv.h) turn by turn: each turn is a request whose body carries the whole history, the earlier user
 * turns and the replies the server really sent, so it is rendered here when the turn is due rather than taken from
 * the pre-rendered payload table. Turn k+1 is intended its delay after turn k ended, and its latencies are measured
 * from that instant, as every request's are from its intended start.
 *
 * Sessions start where plain requests would be issued (worker.c): at each open-loop arrival, or when a closed-loop
 * slot frees, a slot being a whole session. Sessions waiting for a turn's delay sit in a min-heap by due time,
 * which the worker's loop consults beside its arrivals. A turn that fails ends its session; the turns it did not
 * send are counted as failed records (class "session") so that a run never loses them silently.
 *
 * Everything here belongs to one worker thread.
 */
#define _GNU_SOURCE
#include "worker_int.h"

#include "sg_conv.h"
#include "sg_run.h"
#include "sg_tokenizer.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct wk_sess {
    uint64_t id; /* run-wide: the worker's session sequence number * streams + stream index */
    const sg_conv_t *conv;
    uint32_t n_turns; /* planned: the conversation's, or fewer where --request-count ends first */
    uint32_t turn;    /* the turn in flight, or the next one while waiting */
    uint32_t variant; /* the model, the same for every turn */
    bool warmup;
    uint64_t hist_isl;   /* the history's length as the client counts it */
    sg_conv_msg_t *msgs; /* user and assistant messages so far (assistant texts owned) */
    uint32_t n_msgs, cap_msgs;
    int64_t due_ns; /* while waiting: when the next turn is intended */
    /* several URLs: the one its turns go to (its server holds the history's KV/prefix cache), chosen by
     * --url-strategy when its first turn is queued; moved only when that URL leaves the rotation */
    uint8_t url;
    bool url_picked;
};

struct wk_sessions {
    const sg_conv_table_t *convs;
    sg_workload_spec_t spec; /* what a turn's request is rendered with */
    json_t *extra;           /* --extra-inputs, this worker's own copy */
    sg_tok_enc_t *enc;       /* --tokenizer: counts the replies (the history's ISL); NULL: words */
    wk_sess_t **heap;        /* waiting for a turn's delay, earliest due first */
    size_t n_heap, cap_heap;
    uint64_t seq;         /* sessions started */
    uint64_t warmup_left; /* warmup sessions still to start */
    uint64_t turn_quota;  /* measured turns this worker may plan; UINT64_MAX: the duration bounds */
    uint64_t planned;     /* measured turns planned so far */
    bool measured_started;
};

/* ---------------- the heap of waiting sessions ---------------- */

static void heap_swap(wk_sessions_t *S, size_t a, size_t b)
{
    wk_sess_t *t = S->heap[a];
    S->heap[a] = S->heap[b];
    S->heap[b] = t;
}

static int heap_push(wk_sessions_t *S, wk_sess_t *s)
{
    if (S->n_heap == S->cap_heap) {
        size_t ncap = S->cap_heap ? S->cap_heap * 2 : 64;
        wk_sess_t **nh = realloc(S->heap, ncap * sizeof *nh);
        if (!nh)
            return SG_ENOMEM;
        S->heap = nh;
        S->cap_heap = ncap;
    }
    size_t i = S->n_heap++;
    S->heap[i] = s;
    while (i > 0 && S->heap[(i - 1) / 2]->due_ns > S->heap[i]->due_ns) {
        heap_swap(S, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    return 0;
}

static wk_sess_t *heap_pop(wk_sessions_t *S)
{
    wk_sess_t *top = S->heap[0];
    S->heap[0] = S->heap[--S->n_heap];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < S->n_heap && S->heap[l]->due_ns < S->heap[m]->due_ns)
            m = l;
        if (r < S->n_heap && S->heap[r]->due_ns < S->heap[m]->due_ns)
            m = r;
        if (m == i)
            break;
        heap_swap(S, i, m);
        i = m;
    }
    return top;
}

/* ---------------- set-up ---------------- */

int wk_sess_init(sg_worker_t *w, char *err, size_t errlen)
{
    const sg_config_t *cfg = w->cfg;
    const sg_run_t *run = w->run;
    wk_sessions_t *S = calloc(1, sizeof *S);
    if (!S || !run->convs) {
        free(S);
        snprintf(err, errlen, S ? "sessions without conversations" : "out of memory for sessions");
        return SG_ENOMEM;
    }
    S->convs = run->convs;
    S->spec = (sg_workload_spec_t){
        .host_header = cfg->host_header,
        .path = cfg->endpoint_path,
        .headers = (const char *const *)cfg->headers,
        .kind = cfg->endpoint_type,
        .streaming = cfg->streaming,
    };
    if (cfg->extra_inputs_json && strcmp(cfg->extra_inputs_json, "{}") != 0)
        S->extra = json_loads(cfg->extra_inputs_json, 0, NULL);
    if (run->tok && !(S->enc = sg_tok_enc_new(run->tok))) {
        json_decref(S->extra);
        free(S);
        snprintf(err, errlen, "out of memory for the sessions' tokenizer");
        return SG_ENOMEM;
    }
    /* --warmup-request-count counts sessions here; --request-count counts turns (measured ones) */
    uint64_t n = w->n, i = w->index;
    S->warmup_left = cfg->warmup_request_count / n + (i < cfg->warmup_request_count % n ? 1 : 0);
    S->turn_quota = cfg->request_count ? cfg->request_count / n + (i < cfg->request_count % n ? 1 : 0) : UINT64_MAX;
    if (cfg->fixed_schedule)
        S->turn_quota = UINT64_MAX; /* every session of the schedule whole: the schedule bounds them */
    w->quota = UINT64_MAX;          /* sessions bound themselves (wk_sess_start) */
    w->warmup_quota = 0;
    w->sess = S;
    return 0;
}

static void sess_free(wk_sess_t *s)
{
    for (uint32_t i = 1; i < s->n_msgs; i += 2)
        free((char *)s->msgs[i].text);
    free(s->msgs);
    free(s);
}

void wk_sess_free(sg_worker_t *w)
{
    wk_sessions_t *S = w->sess;
    if (!S)
        return;
    for (size_t i = 0; i < S->n_heap; i++)
        sess_free(S->heap[i]);
    free(S->heap);
    json_decref(S->extra);
    sg_tok_enc_free(S->enc);
    free(S);
    w->sess = NULL;
}

/* ---------------- turns ---------------- */

static int msgs_push(wk_sess_t *s, const char *text, size_t len)
{
    if (s->n_msgs == s->cap_msgs) {
        uint32_t ncap = s->cap_msgs ? s->cap_msgs * 2 : 8;
        sg_conv_msg_t *nm = realloc(s->msgs, ncap * sizeof *nm);
        if (!nm)
            return SG_ENOMEM;
        s->msgs = nm;
        s->cap_msgs = ncap;
    }
    s->msgs[s->n_msgs++] = (sg_conv_msg_t){text, len};
    return 0;
}

static const sg_turn_t *turn_of(const wk_sessions_t *S, const wk_sess_t *s, uint32_t k)
{
    return &S->convs->turns[s->conv->first + k];
}

/* refusals: the slot's refused turns in a row (0: it did not end on one), for its back-off (wk_slot_free) */
static void session_end(sg_worker_t *w, wk_sess_t *s, int64_t now, uint32_t refusals)
{
    sess_free(s);
    /* closed loop: a slot is a session, and it is free now (after a back-off when the server refused it) */
    if (w->rate == 0 && !w->issuing_done && !atomic_load_explicit(&w->run->stop, memory_order_relaxed))
        wk_slot_free(w, now, refusals);
}

/*
 * The turns of s from `from` on are not sent: each is counted as a failed record of its own, class cls (session,
 * or cancelled when the run stops), so the session's planned turns are all accounted for.
 */
static void fail_rest(sg_worker_t *w, wk_sess_t *s, uint32_t from, sg_err_class_t cls, const char *why, int64_t now)
{
    const sg_payload_table_t *pt = w->run->payloads;
    for (uint32_t k = from; k < s->n_turns; k++) {
        sg_record_t rec;
        memset(&rec, 0, sizeof rec);
        rec.id = w->issued++ * w->n + w->index;
        rec.worker = w->index;
        rec.payload = (uint32_t)((s->conv->first + k) * pt->n_variants + s->variant);
        rec.model = s->variant;
        rec.warmup = s->warmup;
        rec.intended_ns = now;
        rec.end_ns = now;
        rec.isl_server = -1;
        rec.isl_cached = -1;
        rec.osl_server = -1;
        rec.osl_tokenizer = -1;
        rec.max_tokens = turn_of(w->sess, s, k)->max_tokens;
        rec.streaming = w->cfg->streaming;
        rec.err_class = (uint8_t)cls;
        rec.in_session = true;
        rec.session = s->id;
        rec.turn = k;
        /* several URLs: counted with the session's URL too, so the URLs' counts add up to the run's */
        rec.multi_url = w->n_urls > 1 && s->url_picked;
        rec.url = s->url;
        snprintf(rec.err_msg, sizeof rec.err_msg, "session %" PRIu64 ": %s; turn %u not sent", s->id, why, k);
        wk_record_done(w, &rec);
    }
}

/* Render turn s->turn with its history and queue it, intended at `intended`. */
static void send_turn(sg_worker_t *w, wk_sess_t *s, int64_t intended)
{
    wk_sessions_t *S = w->sess;
    const sg_turn_t *t = turn_of(S, s, s->turn);
    const sg_payload_table_t *pt = w->run->payloads;
    if (msgs_push(s, t->text, t->len) < 0) {
        fail_rest(w, s, s->turn, SG_ERRC_SESSION, "out of memory", intended);
        session_end(w, s, intended, 0);
        return;
    }
    sg_req_t *r = wk_req_new(w, intended);
    if (!r) {
        sess_free(s);
        return;
    }
    sg_record_t *rec = &r->rec;
    char sid[32];
    snprintf(sid, sizeof sid, "%" PRIu64, s->id);
    char err[160];
    int rc = sg_conv_render(&S->spec, S->extra, pt->model_names[s->variant], s->msgs, s->n_msgs, t->max_tokens, sid,
                            &r->turn_payload, err, sizeof err);
    r->payload = &r->turn_payload;
    r->turn_payload.isl = (uint32_t)(s->hist_isl + t->isl > UINT32_MAX ? UINT32_MAX : s->hist_isl + t->isl);
    r->turn_payload.max_tokens = t->max_tokens;
    r->turn_payload.model = s->variant;
    r->turn_payload.streaming = w->cfg->streaming;
    r->sess = s;
    rec->payload = (uint32_t)((s->conv->first + s->turn) * pt->n_variants + s->variant);
    rec->model = s->variant;
    rec->isl = r->turn_payload.isl;
    rec->max_tokens = t->max_tokens;
    rec->streaming = w->cfg->streaming;
    rec->warmup = s->warmup;
    rec->in_session = true;
    rec->session = s->id;
    rec->turn = s->turn;
    if (rc < 0) { /* never sent: the turn fails, and with it the rest of its session */
        wk_set_error(r, SG_ERRC_SESSION, "the turn's request could not be rendered: %s",
                     rc == SG_ENOMEM ? "out of memory" : err);
        wk_req_finish(w, r, intended);
        return;
    }
    /* several URLs: every turn to the session's URL (worker_url.c picks one for the first, by the strategy, and
     * another only when this one left the rotation: its queued turn is then re-routed, and the session stays there) */
    r->rec.url = s->url;
    r->url_picked = s->url_picked;
    wk_wait_push(w, r);
    s->url = r->rec.url;
    s->url_picked = true;
}

bool wk_sess_start(sg_worker_t *w, int64_t intended)
{
    wk_sessions_t *S = w->sess;
    uint64_t seq = S->seq;
    const sg_conv_t *conv = &S->convs->convs[(seq * w->n + w->index) % S->convs->n_convs];
    uint32_t n = conv->n;
    bool warmup = S->warmup_left > 0;
    if (!warmup) {
        /* the count is of turns: the last session is cut to what is left of it, so exactly that many are measured */
        if (S->planned >= S->turn_quota)
            return false;
        if (n > S->turn_quota - S->planned)
            n = (uint32_t)(S->turn_quota - S->planned);
        S->planned += n;
        if (!S->measured_started && w->cfg->benchmark_duration_s > 0)
            w->stop_issue_ns = wk_window_end(w, intended, w->cfg->warmup_request_count > 0);
        S->measured_started = true;
    } else {
        S->warmup_left--;
    }
    wk_sess_t *s = calloc(1, sizeof *s);
    if (!s) {
        w->fatal = SG_ENOMEM;
        snprintf(w->fatal_msg, sizeof w->fatal_msg, "out of memory for sessions");
        return false;
    }
    S->seq++;
    s->id = seq * w->n + w->index;
    s->conv = conv;
    s->n_turns = n;
    s->warmup = warmup;
    uint32_t nv = w->run->payloads->n_variants;
    s->variant = w->cfg->model_strategy == SG_MODEL_RANDOM ? (uint32_t)((s->id * 0x9e3779b97f4a7c15ULL) >> 33) % nv
                                                           : (uint32_t)(s->id % nv);
    send_turn(w, s, intended);
    return true;
}

static uint64_t reply_length(wk_sessions_t *S, const char *text, size_t len)
{
    if (S->enc) {
        ssize_t n = sg_tok_count(S->enc, text, len);
        return n > 0 ? (uint64_t)n : 0;
    }
    return sg_count_words(text, len);
}

void wk_sess_turn_done(sg_worker_t *w, sg_req_t *r)
{
    wk_sessions_t *S = w->sess;
    wk_sess_t *s = r->sess;
    const sg_record_t *rec = &r->rec;
    int64_t ended = rec->end_ns;
    free(r->turn_payload.bytes);
    r->turn_payload.bytes = NULL;
    r->sess = NULL;
    bool stopping = atomic_load_explicit(&w->run->stop, memory_order_relaxed) || w->fatal;
    if (rec->err_class != SG_ERRC_NONE || stopping) {
        bool cancel = stopping || rec->err_class == SG_ERRC_CANCELLED;
        char why[64];
        snprintf(why, sizeof why, "%s", cancel ? "the run stopped" : sg_err_class_name(rec->err_class));
        if (rec->err_class != SG_ERRC_NONE && !cancel)
            snprintf(why, sizeof why, "turn %u failed: %s", s->turn, sg_err_class_name(rec->err_class));
        fail_rest(w, s, s->turn + 1, cancel ? SG_ERRC_CANCELLED : SG_ERRC_SESSION, why, ended);
        session_end(w, s, ended, r->refused ? r->slot_refusals + 1u : 0);
        return;
    }
    s->url = r->rec.url; /* where it was served (re-routed while queued, it moved) */
    const sg_turn_t *t = turn_of(S, s, s->turn);
    size_t len = r->text_lost ? 0 : r->text_len;
    char *reply = malloc(len + 1);
    if (!reply || msgs_push(s, reply, len) < 0) {
        free(reply);
        fail_rest(w, s, s->turn + 1, SG_ERRC_SESSION, "out of memory", ended);
        session_end(w, s, ended, 0);
        return;
    }
    if (len)
        memcpy(reply, r->text, len);
    reply[len] = '\0';
    s->hist_isl += t->isl + reply_length(S, reply, len);
    if (++s->turn >= s->n_turns) {
        session_end(w, s, ended, 0);
        return;
    }
    const sg_turn_t *next = turn_of(S, s, s->turn);
    s->due_ns = ended + next->delay_ns;
    if (w->cfg->fixed_schedule && next->at_ns >= 0) {
        /* replayed at its timestamp, as the schedule maps the first turns; not before the turn it follows ended */
        int64_t at = w->run->start_ns + (int64_t)llround((double)next->at_ns / w->cfg->fixed_schedule_speedup);
        s->due_ns = at > ended ? at : ended;
    }
    if (heap_push(S, s) < 0) {
        fail_rest(w, s, s->turn, SG_ERRC_SESSION, "out of memory", ended);
        session_end(w, s, ended, 0);
    }
}

void wk_sess_due(sg_worker_t *w, int64_t now)
{
    wk_sessions_t *S = w->sess;
    bool any = false;
    while (S->n_heap && S->heap[0]->due_ns <= now && !w->fatal) {
        wk_sess_t *s = heap_pop(S);
        send_turn(w, s, s->due_ns); /* intended at its due time, however late the worker is */
        any = true;
    }
    if (any)
        wk_conn_dispatch(w);
}

int64_t wk_sess_next_due(const sg_worker_t *w)
{
    const wk_sessions_t *S = w->sess;
    return S->n_heap ? S->heap[0]->due_ns : INT64_MAX;
}

void wk_sess_cancel(sg_worker_t *w, int64_t now)
{
    wk_sessions_t *S = w->sess;
    while (S->n_heap) {
        wk_sess_t *s = heap_pop(S);
        fail_rest(w, s, s->turn, SG_ERRC_CANCELLED, "the run stopped", now);
        sess_free(s);
    }
}
