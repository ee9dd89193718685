/*
 * Multi-turn sessions: the conversations a session run plays, and each turn's request rendered when it is sent.
 *
 * A conversation is a list of user turns (text, its length, the max_tokens asked, the delay before it). It is
 * built once before the run (synthetic, from the --conversation-* flags, or from a multi_turn input file) and is
 * read-only afterwards. A turn's request carries the whole history (earlier user turns and the replies the server
 * really sent), so unlike the payload table (sg_workload.h) it cannot be pre-rendered: sg_conv_render builds it on
 * the worker's thread when the turn is due. docs/sessions.md describes the semantics.
 */
#ifndef SG_CONV_H
#define SG_CONV_H

#include "sg_common.h"
#include "sg_workload.h"

struct sg_input;
struct json_t;

typedef struct {
    char *text; /* the user's message, len bytes, NUL-terminated; owned by the table */
    size_t len;
    uint32_t isl;        /* its length as the client counts (tokens with a tokenizer, else words) */
    uint32_t max_tokens; /* asked of the server; 0 when not asked */
    int64_t delay_ns;    /* wait after the previous turn ended (turn 0: none) */
    int64_t at_ns;       /* its timestamp in a multi_turn file, or -1; sg_conv_fixed_schedule offsets them */
} sg_turn_t;

typedef struct {
    uint32_t first; /* its first turn in sg_conv_table_t.turns */
    uint32_t n;     /* turns, at least 1 */
} sg_conv_t;

typedef struct {
    sg_turn_t *turns; /* every conversation's turns, conversation after conversation */
    size_t n_turns;
    sg_conv_t *convs;
    size_t n_convs;
} sg_conv_table_t;

typedef struct {
    uint32_t num;                       /* synthetic conversations (--conversation-num) */
    double turn_mean, turn_stddev;      /* turns per conversation: normal, rounded, at least 1 */
    double delay_mean_ms, delay_stddev; /* delay before each turn after the first: normal, at least 0 */
    double delay_ratio;                 /* every delay (the file's too) is multiplied by this */
    uint32_t isl_mean, isl_stddev;      /* each user turn's length */
    int32_t osl_mean;                   /* -1: no max_tokens */
    uint32_t osl_stddev;
    uint64_t seed;
    const struct sg_tokenizer *tok;
    const struct sg_input *input; /* a multi_turn file (its entries grouped by session), or NULL: synthetic */
} sg_conv_spec_t;

/* Build the table (deterministic for a seed). 0, or negative with one line in err. Free with sg_conv_free. */
SG_WUR int sg_conv_build(const sg_conv_spec_t *spec, sg_conv_table_t *out, char *err, size_t errlen);

/*
 * --fixed-schedule: the conversations in the order of their first turns' timestamps (stable), each turn's at_ns
 * made relative to the earliest, and *times (malloc'd, one per conversation) the schedule of their first turns.
 * Every first turn must have a timestamp (sg_input checks, naming the line). 0 or SG_ENOMEM.
 */
SG_WUR int sg_conv_fixed_schedule(sg_conv_table_t *t, int64_t **times);
void sg_conv_free(sg_conv_table_t *t);

/* One message of a turn's history: user and assistant alternate, starting with the user. */
typedef struct {
    const char *text;
    size_t len;
} sg_conv_msg_t;

/*
 * The request of one turn: msgs[0..n_msgs) is the history ending with the turn's own user message. The body is in
 * spec->kind's shape (chat, responses, messages: a list of user/assistant messages; completions and generate: the
 * messages joined by blank lines into one prompt), extra (an object, or NULL) merged last, the head carries spec's
 * headers and X-Session-ID / X-Correlation-ID: session_id. p->bytes is malloc'd (the caller frees it), p->len set;
 * the other members are left to the caller. 0, SG_ENOMEM, or SG_EINVAL (with a message in err).
 */
SG_WUR int sg_conv_render(const sg_workload_spec_t *spec, const struct json_t *extra, const char *model,
                          const sg_conv_msg_t *msgs, size_t n_msgs, uint32_t max_tokens, const char *session_id,
                          sg_payload_t *p, char *err, size_t errlen);

#endif
