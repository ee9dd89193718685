/*
 * The event loop's receive buffers: the kernel gets SG_LOOP_BUFS_FIRST at first, and a receive that finds none
 * (ENOBUFS) doubles them up to the count asked for. Checked with many socket pairs receiving at once: every byte
 * arrives once and in order, the live count grows only as far as needed, and the before_submit hook runs on
 * every iteration.
 */
#define _GNU_SOURCE
#include "sg_loop.h"
#include "test.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#define PAIRS 200
#define ROUNDS 3
#define CHUNK 1000

typedef struct {
    sg_op_t op;
    sg_loop_t *l;
    int fd;
    bool armed;
    size_t got;
    unsigned char next; /* the byte value expected next */
    int bad;
    int enobufs;
} rx_t;

static void on_rx(sg_op_t *op, const struct io_uring_cqe *cqe)
{
    rx_t *r = SG_CONTAINER_OF(op, rx_t, op);
    if (cqe->res > 0 && (cqe->flags & IORING_CQE_F_BUFFER)) {
        unsigned bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
        const unsigned char *p = (const unsigned char *)sg_loop_buf(r->l, bid);
        for (int i = 0; i < cqe->res; i++)
            if (p[i] != r->next++)
                r->bad++;
        r->got += (size_t)cqe->res;
        sg_loop_buf_release(r->l, bid);
    } else if (cqe->res == -ENOBUFS) {
        r->enobufs++;
    } else if (cqe->res < 0) {
        r->bad++;
    }
    if (!(cqe->flags & IORING_CQE_F_MORE))
        r->armed = false;
}

/* Arm whichever receives have ended (multishot stops on ENOBUFS) and run the loop until every one of the n has
 * want bytes. */
static void receive_all(sg_loop_t *l, rx_t *rx, int n, size_t want)
{
    for (int spins = 0; spins < 2000; spins++) {
        bool done = true;
        for (int i = 0; i < n; i++) {
            if (!rx[i].armed) {
                sg_loop_recv_multishot(l, rx[i].fd, &rx[i].op);
                rx[i].armed = true;
            }
            done = done && rx[i].got == want;
        }
        if (done)
            return;
        CHECK(sg_loop_run_once(l, 0) >= 0);
    }
}

static int hook_calls;
static void hook(void *arg)
{
    (void)arg;
    hook_calls++;
}

static void test_buffers_grow(void)
{
    sg_loop_t l;
    int err = sg_loop_init(&l, 64, 1024, 512);
    CHECK_EQ_INT(err, 0);
    if (err)
        return;
    l.before_submit = hook;
    CHECK_EQ_INT(l.buf_live, SG_LOOP_BUFS_FIRST);

    static rx_t rx[PAIRS];
    int peer[PAIRS];
    for (int i = 0; i < PAIRS; i++) {
        int sv[2];
        CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        rx[i] = (rx_t){.op.fn = on_rx, .l = &l, .fd = sv[0]};
        peer[i] = sv[1];
    }
    unsigned char buf[CHUNK];
    int enobufs = 0;
    for (int round = 0; round < ROUNDS; round++) {
        /* every pair has data at once: far more receives than the first buffers */
        for (int i = 0; i < PAIRS; i++) {
            for (int k = 0; k < CHUNK; k++)
                buf[k] = (unsigned char)(round * CHUNK + k);
            CHECK_EQ_INT(write(peer[i], buf, CHUNK), CHUNK);
        }
        size_t want = (size_t)(round + 1) * CHUNK;
        receive_all(&l, rx, PAIRS, want);
        for (int i = 0; i < PAIRS; i++)
            CHECK_EQ_INT(rx[i].got, want);
    }
    for (int i = 0; i < PAIRS; i++) {
        CHECK_EQ_INT(rx[i].bad, 0);
        enobufs += rx[i].enobufs;
    }
    /* the first 64 ran out, so the kernel got more; never more than the count asked for */
    CHECK(enobufs > 0);
    CHECK(l.buf_live > SG_LOOP_BUFS_FIRST);
    CHECK(l.buf_live <= 1024);
    CHECK(hook_calls > 0);
    for (int i = 0; i < PAIRS; i++) {
        close(rx[i].fd);
        close(peer[i]);
    }
    sg_loop_destroy(&l);
}

/* A count below the first batch: all of them at once, and no growth past it. */
static void test_few_buffers(void)
{
    sg_loop_t l;
    int err = sg_loop_init(&l, 8, 4, 256);
    CHECK_EQ_INT(err, 0);
    if (err)
        return;
    CHECK_EQ_INT(l.buf_live, 4);
    static rx_t rx[16];
    int peer[16];
    for (int i = 0; i < 16; i++) {
        int sv[2];
        CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        rx[i] = (rx_t){.op.fn = on_rx, .l = &l, .fd = sv[0]};
        peer[i] = sv[1];
        unsigned char b[100];
        for (int k = 0; k < 100; k++)
            b[k] = (unsigned char)k;
        CHECK_EQ_INT(write(peer[i], b, sizeof b), 100);
    }
    receive_all(&l, rx, 16, 100);
    for (int i = 0; i < 16; i++) {
        CHECK_EQ_INT(rx[i].got, 100);
        CHECK_EQ_INT(rx[i].bad, 0);
        close(rx[i].fd);
        close(peer[i]);
    }
    CHECK_EQ_INT(l.buf_live, 4);
    sg_loop_destroy(&l);
}

int main(void)
{
    test_buffers_grow();
    test_few_buffers();
    return test_finish("test_loop");
}
