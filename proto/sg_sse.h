/*
 * Server-sent events (text/event-stream), sans-I/O. Feed body bytes in any split; complete events are delivered
 * in place where they lie whole inside one fed buffer, or from an internal buffer when they straddle feeds.
 * Follows the WHATWG parsing rules that matter here: lines end in CRLF, LF or CR; a leading UTF-8 BOM is
 * skipped; lines starting with ':' are comments; "field: value" strips one space after the colon; several
 * data lines join with '\n'; an event is dispatched at a blank line, and only if it had data.
 */
#ifndef SG_SSE_H
#define SG_SSE_H

#include "sg_common.h"

typedef struct {
    sg_slice_t event; /* "event:" field, empty when absent */
    sg_slice_t data;  /* data lines joined with '\n' */
} sg_sse_event_t;

typedef struct {
    /* Return 0 to go on, negative to stop (returned from feed). Slices valid only during the call. */
    int (*on_event)(void *ud, const sg_sse_event_t *ev);
} sg_sse_cb_t;

typedef struct {
    int state; /* private: bytes of a BOM matched so far, while !bom_checked */
    bool bom_checked;
    bool last_was_cr; /* the last feed ended in CR: an LF starting the next one belongs to it */
    char *buf;        /* partial line carried between feeds; lazily allocated */
    size_t len;
    size_t cap;
    size_t max_event; /* hard cap on one event's bytes */
    /* private scratch used while assembling an event */
    char *scratch; /* data lines joined, once the event's data cannot be a slice of the fed buffer */
    size_t scratch_cap;
    /* private: the event being assembled */
    size_t scratch_len;
    sg_slice_t data;  /* the single data value, in place in the current feed, while !data_owned */
    sg_slice_t event; /* the event name, in place in the current feed, while !event_owned */
    char *evbuf;      /* the event name once copied */
    size_t ev_len;
    size_t ev_cap;
    bool has_data;
    bool data_owned;
    bool event_owned;
} sg_sse_t;

/*
 * max_event bounds what one event may make us hold: its joined data plus its event name, and any single line
 * (comments and ignored fields included); past it, feed returns SG_ETOOBIG.
 */
void sg_sse_init(sg_sse_t *p, size_t max_event);
/* Forget any partial event (next response on the same connection); keeps buffers. The next byte is again the
 * start of a stream (a BOM is skipped). Also the way back after a negative return from feed. */
void sg_sse_reset(sg_sse_t *p);
void sg_sse_free(sg_sse_t *p);
/*
 * Returns 0, SG_ETOOBIG (an event over max_event), SG_ENOMEM, or a callback's negative return (after which
 * the parser must be reset before it is fed again). on_event is called in stream order for every event
 * completed by these bytes. An event whose lines all lie inside this buffer is delivered without a copy
 * (slices point into data) unless it has several data lines, which must be joined in scratch.
 */
SG_WUR int sg_sse_feed(sg_sse_t *p, const char *data, size_t len, const sg_sse_cb_t *cb, void *ud);
/*
 * True when bytes of an unfinished event are pending (the stream was cut inside an event): a partial line, or
 * data or event fields not yet dispatched by a blank line.
 */
bool sg_sse_pending(const sg_sse_t *p);

#endif
