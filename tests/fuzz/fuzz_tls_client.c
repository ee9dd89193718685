/*
 * A TLS client handshake fed arbitrary "server" bytes, in pieces the input chooses: never a crash, never success
 * (no bytes can finish a handshake with our fresh random secrets), and every failure carries its one-line message.
 * The first byte picks the feeding pattern and whether verification is on; the input ends with a TCP close.
 */
#include "sg_tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sg_tls_ctx_t *ctx_verify, *ctx_insecure;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ctx_verify) {
        char err[256];
        /* Verification against the system store (a fuzzed certificate never chains to it), and -k, which lets
         * the fuzzer reach past the certificate into the rest of the handshake. */
        sg_tls_opts_t o = {.insecure = true, .alpn = "h2,http/1.1", .alpn_required = true};
        if (sg_tls_client_ctx_new(&o, &ctx_insecure, err, sizeof err) != 0 ||
            sg_tls_client_ctx_new(&(sg_tls_opts_t){0}, &ctx_verify, err, sizeof err) != 0) {
            fprintf(stderr, "fuzz_tls_client: %s\n", err);
            abort();
        }
    }
    if (size < 1)
        return 0;
    uint8_t mode = data[0];
    data++;
    size--;
    sg_tls_conn_t *c = NULL;
    if (sg_tls_conn_new(mode & 1 ? ctx_insecure : ctx_verify, "localhost", NULL, &c) != 0)
        abort();
    size_t piece = (size_t)(mode >> 1) + 1; /* 1..128 bytes per feed */
    int rc = sg_tls_handshake(c);
    for (size_t off = 0; rc == 1 && off < size; off += piece) {
        const uint8_t *p;
        size_t n;
        sg_tls_out_peek(c, &p, &n); /* the ClientHello and anything else: "sent" */
        sg_tls_out_consume(c, n);
        size_t step = size - off < piece ? size - off : piece;
        if (sg_tls_feed(c, data + off, step) != 0)
            abort(); /* inputs are far below the cap */
        rc = sg_tls_handshake(c);
    }
    if (rc == 1) {
        sg_tls_feed_eof(c);
        rc = sg_tls_handshake(c);
    }
    if (rc != SG_ETLS || !sg_tls_error(c)[0] || strncmp(sg_tls_error(c), "TLS: ", 5) != 0) {
        fprintf(stderr, "fuzz_tls_client: handshake ended with %d \"%s\"\n", rc, sg_tls_error(c));
        abort();
    }
    char buf[64];
    if (sg_tls_read(c, buf, sizeof buf) != SG_ETLS || sg_tls_write(c, "x", 1) != SG_ETLS)
        abort(); /* a failed connection stays failed */
    sg_tls_conn_free(c);
    return 0;
}
