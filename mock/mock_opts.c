/* `surge mock` flags: --name value or --name=value; every bad value is named on one stderr line. */
#include "mock_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static const char usage_text[] =
    "usage: surge mock [options]\n"
    "\n"
    "A mock LLM server: POST /v1/chat/completions and /v1/completions (any path ending so), GET /v1/models,\n"
    "GET /health. Answers with synthetic tokens after --ttft-ms, then one every --itl-ms, streamed over SSE when\n"
    "the request says \"stream\": true. It also serves, each in its own shape (docs/endpoints.md): .../embeddings,\n"
    ".../ranking (NIM), .../rerank (TEI with \"texts\", Cohere and llama.cpp with \"documents\"), .../responses\n"
    "(OpenAI Responses API), .../messages (Anthropic Messages API), .../generate and .../generate_stream (TGI).\n"
    "Embeddings and rankings are answered whole after the TTFT (with --prefill-ms-per-token's share).\n"
    "Speaks HTTP/1.1 and, on connections that open with the HTTP/2 preface, h2c (prior knowledge, as\n"
    "surge profile --http2 and h2load): same endpoints, timing, faults and record; SSE events go out as DATA\n"
    "frames. Over h2c it also serves Triton's KServe v2 gRPC API (inference.GRPCInferenceService, what\n"
    "surge profile --service-kind triton calls): ModelInfer (the whole text_output at TTFT + (n-1) ITL),\n"
    "ModelStreamInfer (one response per token, on the SSE timing), ServerLive/ServerReady/ModelReady; other\n"
    "methods UNIMPLEMENTED. --error-rate answers grpc-status INTERNAL, --drop-rate resets the stream, and\n"
    "--record lines carry every input tensor.\n"
    "\n"
    "  --port P             TCP port; 0 picks a free one (default 8000)\n"
    "  --host H             address to bind (default 127.0.0.1)\n"
    "  --ttft-ms X          time to first token, from request arrival (default 20)\n"
    "  --itl-ms Y           time between tokens (default 5)\n"
    "  --output-tokens N    tokens per response; 0 = the request's max_tokens / max_completion_tokens,\n"
    "                       16 when it has none (default 0)\n"
    "  --workers N          threads, each with its own listening socket (SO_REUSEPORT) and ring (default 1)\n"
    "  --error-rate F       fraction of completion requests answered 500 (0..1)\n"
    "  --drop-rate F        fraction of completion requests whose connection is closed mid-response (0..1):\n"
    "                       streams after about half their tokens, non-streamed before the response;\n"
    "                       over HTTP/2 the stream is reset (RST_STREAM INTERNAL_ERROR), not the connection\n"
    "  --max-concurrent-streams N\n"
    "                       HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS per connection (default 128)\n"
    "  --stall-start-ms S   with --stall-ms: start of a window in which nothing is sent, S ms from the start\n"
    "                       (--fault-origin)\n"
    "  --stall-ms D         length of that window; what falls due inside it goes out at its end\n"
    "  --fault KIND[:ARGS][@FRACTION]\n"
    "                       a scripted fault (repeatable; docs/mock.md#faults). Per completion request, each\n"
    "                       request drawing at most one (FRACTION default 1; the fractions add up to at most 1):\n"
    "                         rst[:CODE]         HTTP/2: RST_STREAM CODE (default internal; a number or a name:\n"
    "                                            cancel, refused_stream, ...) after half the tokens (non-streamed:\n"
    "                                            instead of the answer); HTTP/1.1: a TCP reset there\n"
    "                         stall-write:MS[,K] nothing is written for MS before token K (default 0, the first)\n"
    "                         cut[:BYTES|head]   the connection closes after BYTES of the response (default\n"
    "                                            head: its head); HTTP/2 counts the stream's body bytes\n"
    "                         half-close[:BYTES|head]  the same with shutdown(SHUT_WR): reading goes on\n"
    "                       Per connection, each drawing at most one:\n"
    "                         trickle:BYTES,MS   every send at most BYTES, MS apart\n"
    "                         bwcap:BPS          at most BPS bytes/s\n"
    "                         goaway[:N[,CODE]]  HTTP/2: GOAWAY after the N-th request (default 1); CODE no\n"
    "                                            (default) is graceful: the streams up to it are answered, then\n"
    "                                            the close; another code ends the connection at once.\n"
    "                                            HTTP/1.1: the N-th answer says Connection: close (graceful) or\n"
    "                                            the N-th request is not answered and the connection closes\n"
    "                       At a time, on every connection:\n"
    "                         crash:AT[,DOWN]    AT ms after the start (--fault-origin) every connection closes and\n"
    "                                            the port stops listening (connects are refused), as when the\n"
    "                                            server is killed; with DOWN, it listens again on the same port\n"
    "                                            DOWN ms later\n"
    "                         stall-read:AT,MS   from AT ms, for MS ms, nothing received is read: requests in\n"
    "                                            that window are taken (and timed) at its end\n"
    "                       --record lines of requests a fault hit say \"fault\": KIND\n"
    "  --fault-origin O     what crash, stall-read and --stall-start-ms count from: start (default), or request:\n"
    "                       the first request the mock receives, so a fault lands at a known time into a run\n"
    "  --tokenizer T        count usage with this tokenizer (a tokenizer.json, a *.tiktoken file, a directory or\n"
    "                       a cached Hugging Face model id, as surge profile --tokenizer): prompt_tokens is the\n"
    "                       count of the last message's content (completions: the prompt), completion_tokens the\n"
    "                       count of the text sent. Without it: the prompt's words and the number of words sent\n"
    "                       (each is one token in GPT-family vocabularies)\n"
    "  --usage-completion-offset N\n"
    "                       add N (may be negative; the result is at least 0) to usage.completion_tokens, so\n"
    "                       that usage disagrees with the text (for testing a client's comparison)\n"
    "  --no-usage           never send usage, even when stream_options.include_usage asks for it (the other\n"
    "                       APIs' usage members are left out too)\n"
    "  --prefix-cache       chat and completions usage add prompt_tokens_details.cached_tokens: the words of\n"
    "                       the longest prefix (whole words) the prompt shares with any earlier prompt, as a\n"
    "                       server's prefix cache would find it\n"
    "  --reasoning-tokens N the first N output tokens of each response are reasoning (default 0): chat's\n"
    "                       delta.reasoning_content (message.reasoning_content whole), a reasoning output item\n"
    "                       (responses), a thinking block (messages); usage counts them in the output tokens and\n"
    "                       as reasoning_tokens. Completions and TGI have no reasoning channel: not there\n"
    "  --reasoning-field F  chat's reasoning member: reasoning_content (default) or reasoning (vLLM's newer name)\n"
    "  --embedding-dim N    floats per embedding vector (default 16, at most 16384)\n"
    "  --tool-call-rate F   the share of requests carrying tools (and a tool_choice other than none) that are\n"
    "                       answered with a tool call (default 1): chat, responses and messages, streamed as\n"
    "                       argument deltas, one per output token; the exit line counts both\n"
    "  --tls                serve TLS (wolfSSL) instead of plaintext, with ALPN h2 and http/1.1: HTTP/2 when the\n"
    "                       client selects h2, HTTP/1.1 otherwise. Without --tls-cert a self-signed certificate\n"
    "                       (ECDSA P-256, CN and subjectAltName localhost and 127.0.0.1) is made at start:\n"
    "                       clients need -k, or its PEM from --tls-cert-out as their CA file\n"
    "  --tls-cert FILE      with --tls-key: serve this PEM certificate chain (implies --tls)\n"
    "  --tls-key FILE       its PEM private key\n"
    "  --tls-cert-out FILE  write the self-signed certificate made by --tls to FILE (PEM)\n"
    "  --tls-alpn LIST      ALPN protocols accepted, preferred first (default h2,http/1.1; http/1.1 alone makes\n"
    "                       an HTTP/1.1-only TLS server)\n"
    "  --reuse-port         with --port P: join P where another mock already listens (SO_REUSEPORT), the kernel\n"
    "                       spreading connections over the processes (without it a taken port is an error)\n"
    "  --backlog N          each listening socket's accept queue (listen(2)'s backlog; the kernel caps it at\n"
    "                       net.core.somaxconn) (default 4096)\n"
    "  --close-after N      HTTP/1.1: close every connection after its N-th response, right after the last byte\n"
    "                       (default 0: keep connections open while the client does)\n"
    "  --close-notice HOW   what the responses say about that close: connection (default: the last one carries\n"
    "                       Connection: close, as nginx does), max (each carries Keep-Alive: timeout=5,\n"
    "                       max=<responses left, this one included> and nothing more, as a server relying on the\n"
    "                       count alone), none (each advertises Keep-Alive: timeout=5, max=100 and the close comes\n"
    "                       unannounced, as llama-server's after a streamed response)\n"
    "  --close-delay-ms D   the FIN follows the last byte D ms later; requests arriving meanwhile are read and\n"
    "                       dropped unanswered (a client that reused the connection at once loses its request)\n"
    "  --max-batch B        a server model with a known capacity (docs/mock.md): at most B sequences are\n"
    "                       generated at once, over all workers; the others wait in one FIFO and their\n"
    "                       timing starts when a slot frees, so their TTFT grows by the wait. Capacity:\n"
    "                       B / (ttft + (tokens - 1) x itl) requests/s (default 0: no limit)\n"
    "  --prefill-ms-per-token P\n"
    "                       TTFT grows by P ms per prompt token (as usage counts them) (default 0)\n"
    "  --io-backend auto|io_uring|epoll\n"
    "                       the workers' I/O (default: $SURGE_IO_BACKEND, else auto: io_uring where it works,\n"
    "                       else epoll, with a line saying why)\n"
    "  --record FILE        append one JSON line per completion request received (the other APIs' lines add\n"
    "                       \"api\" and \"inputs\")\n"
    "  --send-log FILE      one JSON line per streamed token over HTTP/1.1, {\"id\":N,\"k\":K,\"t_ns\":T}: the\n"
    "                       response's id number, the token's index, and CLOCK_MONOTONIC ns when it was\n"
    "                       rendered for the send that follows at once (to check a client's timing on this host)\n"
    "  --port-file FILE     write the bound port to FILE (atomically) once listening\n"
    "  --exit-after SEC     stop after SEC seconds, as on SIGINT\n"
    "  --quiet              print neither the listening line nor the exit summary\n"
    "  --help               this text\n";

static int bad(const char *flag, const char *val, const char *why)
{
    if (val)
        fprintf(stderr, "surge mock: %s: invalid value \"%s\": %s\n", flag, val, why);
    else
        fprintf(stderr, "surge mock: %s: %s\n", flag, why);
    return 2;
}

static bool parse_double(const char *s, double lo, double hi, double *out)
{
    if (!*s)
        return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v) || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static bool parse_uint(const char *s, uint64_t hi, uint64_t *out)
{
    if (*s < '0' || *s > '9')
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > hi)
        return false;
    *out = v;
    return true;
}

int sg_mock_parse_args(int argc, char **argv, sg_mock_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->host = "127.0.0.1";
    o->port = 8000;
    o->ttft_ms = 20;
    o->itl_ms = 5;
    o->workers = 1;
    o->backlog = 4096;
    o->tool_call_rate = 1;
    o->max_streams = SG_MOCK_DEFAULT_STREAMS;
    o->embedding_dim = SG_MOCK_DEFAULT_EMBEDDING_DIM;
    const char *be = getenv("SURGE_IO_BACKEND");
    if (be && *be && (o->io_backend = sg_io_backend_parse(be)) < 0)
        return bad("SURGE_IO_BACKEND", be, "expected auto, io_uring or epoll");
    bool have_stall_start = false, have_stall = false, have_notice = false, have_delay = false;

    int i = 0;
    if (argc > 0 && strcmp(argv[0], "mock") == 0)
        i = 1;
    for (; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(usage_text, stdout);
            return 1;
        }
        if (strcmp(arg, "--quiet") == 0 || strcmp(arg, "-q") == 0) {
            o->quiet = true;
            continue;
        }
        if (strcmp(arg, "--tls") == 0) {
            o->tls = true;
            continue;
        }
        if (strcmp(arg, "--reuse-port") == 0) {
            o->reuse_port = true;
            continue;
        }
        if (strcmp(arg, "--no-usage") == 0) {
            o->no_usage = true;
            continue;
        }
        if (strcmp(arg, "--prefix-cache") == 0) {
            o->prefix_cache = true;
            continue;
        }
        if (strncmp(arg, "--", 2) != 0)
            return bad(arg, NULL, "unexpected argument (see surge mock --help)");

        /* --name=value or --name value */
        char name[64];
        const char *val;
        const char *eq = strchr(arg, '=');
        if (eq) {
            size_t n = (size_t)(eq - arg);
            if (n >= sizeof(name))
                return bad(arg, NULL, "unknown flag (see surge mock --help)");
            memcpy(name, arg, n);
            name[n] = 0;
            val = eq + 1;
        } else {
            snprintf(name, sizeof(name), "%s", arg);
            val = NULL;
        }
        static const char *const known[] = {"--port",
                                            "--host",
                                            "--ttft-ms",
                                            "--itl-ms",
                                            "--output-tokens",
                                            "--workers",
                                            "--error-rate",
                                            "--drop-rate",
                                            "--stall-start-ms",
                                            "--stall-ms",
                                            "--record",
                                            "--send-log",
                                            "--port-file",
                                            "--exit-after",
                                            "--tokenizer",
                                            "--usage-completion-offset",
                                            "--max-concurrent-streams",
                                            "--tls-cert",
                                            "--tls-key",
                                            "--tls-cert-out",
                                            "--tls-alpn",
                                            "--close-after",
                                            "--backlog",
                                            "--close-notice",
                                            "--close-delay-ms",
                                            "--max-batch",
                                            "--prefill-ms-per-token",
                                            "--io-backend",
                                            "--reasoning-tokens",
                                            "--reasoning-field",
                                            "--embedding-dim",
                                            "--tool-call-rate",
                                            "--fault",
                                            "--fault-origin"};
        bool is_known = false;
        for (size_t k = 0; k < SG_ARRAY_LEN(known); k++)
            is_known |= strcmp(name, known[k]) == 0;
        if (!is_known)
            return bad(name, NULL, "unknown flag (see surge mock --help)");
        if (!val) {
            if (i + 1 >= argc)
                return bad(name, NULL, "needs a value");
            val = argv[++i];
        }

        uint64_t u;
        double d;
        if (strcmp(name, "--port") == 0) {
            if (!parse_uint(val, 65535, &u))
                return bad(name, val, "expected a port number 0..65535");
            o->port = (uint16_t)u;
        } else if (strcmp(name, "--host") == 0) {
            if (!*val)
                return bad(name, val, "expected a host name or address");
            o->host = val;
        } else if (strcmp(name, "--ttft-ms") == 0) {
            if (!parse_double(val, 0, 86400e3, &o->ttft_ms))
                return bad(name, val, "expected milliseconds >= 0");
        } else if (strcmp(name, "--itl-ms") == 0) {
            if (!parse_double(val, 0, 86400e3, &o->itl_ms))
                return bad(name, val, "expected milliseconds >= 0");
        } else if (strcmp(name, "--output-tokens") == 0) {
            if (!parse_uint(val, SG_MOCK_MAX_TOKENS, &u))
                return bad(name, val, "expected a token count 0..1048576");
            o->output_tokens = (uint32_t)u;
        } else if (strcmp(name, "--workers") == 0) {
            if (!parse_uint(val, SG_MOCK_MAX_WORKERS, &u) || u == 0)
                return bad(name, val, "expected a thread count 1..256");
            o->workers = (unsigned)u;
        } else if (strcmp(name, "--error-rate") == 0) {
            if (!parse_double(val, 0, 1, &o->error_rate))
                return bad(name, val, "expected a fraction 0..1");
        } else if (strcmp(name, "--drop-rate") == 0) {
            if (!parse_double(val, 0, 1, &o->drop_rate))
                return bad(name, val, "expected a fraction 0..1");
        } else if (strcmp(name, "--stall-start-ms") == 0) {
            if (!parse_double(val, 0, 86400e3, &o->stall_start_ms))
                return bad(name, val, "expected milliseconds >= 0");
            have_stall_start = true;
        } else if (strcmp(name, "--stall-ms") == 0) {
            if (!parse_double(val, 0, 86400e3, &o->stall_ms))
                return bad(name, val, "expected milliseconds >= 0");
            have_stall = true;
        } else if (strcmp(name, "--record") == 0) {
            if (!*val)
                return bad(name, val, "expected a file name");
            o->record_path = val;
        } else if (strcmp(name, "--send-log") == 0) {
            if (!*val)
                return bad(name, val, "expected a file name");
            o->send_log_path = val;
        } else if (strcmp(name, "--port-file") == 0) {
            if (!*val)
                return bad(name, val, "expected a file name");
            o->port_file = val;
        } else if (strcmp(name, "--tokenizer") == 0) {
            if (!*val)
                return bad(name, val, "expected a tokenizer file, directory or model id");
            o->tokenizer = val;
        } else if (strcmp(name, "--usage-completion-offset") == 0) {
            char *end;
            errno = 0;
            long long v = strtoll(val, &end, 10);
            if (!*val || errno || *end || v < -(1LL << 30) || v > (1LL << 30))
                return bad(name, val, "expected an integer (tokens, may be negative)");
            o->usage_completion_offset = v;
        } else if (strcmp(name, "--backlog") == 0) {
            if (!parse_uint(val, 1u << 20, &u) || u == 0)
                return bad(name, val, "expected a queue length 1..1048576");
            o->backlog = (uint32_t)u;
        } else if (strcmp(name, "--max-concurrent-streams") == 0) {
            if (!parse_uint(val, 1u << 20, &u) || u == 0)
                return bad(name, val, "expected a stream count 1..1048576");
            o->max_streams = (uint32_t)u;
        } else if (strcmp(name, "--tls-cert") == 0 || strcmp(name, "--tls-key") == 0 ||
                   strcmp(name, "--tls-cert-out") == 0) {
            if (!*val)
                return bad(name, val, "expected a file name");
            if (strcmp(name, "--tls-cert-out") == 0)
                o->tls_cert_out = val;
            else if (strcmp(name, "--tls-cert") == 0)
                o->tls_cert = val;
            else
                o->tls_key = val;
        } else if (strcmp(name, "--tls-alpn") == 0) {
            if (strcmp(val, "h2,http/1.1") != 0 && strcmp(val, "http/1.1,h2") != 0 && strcmp(val, "h2") != 0 &&
                strcmp(val, "http/1.1") != 0)
                return bad(name, val, "expected h2,http/1.1, http/1.1,h2, h2 or http/1.1");
            o->tls_alpn = val;
        } else if (strcmp(name, "--close-after") == 0) {
            if (!parse_uint(val, UINT32_MAX, &u) || u == 0)
                return bad(name, val, "expected a response count 1..4294967295");
            o->close_after = (uint32_t)u;
        } else if (strcmp(name, "--close-notice") == 0) {
            if (strcmp(val, "connection") == 0)
                o->close_notice = SG_MOCK_NOTICE_CONNECTION;
            else if (strcmp(val, "max") == 0)
                o->close_notice = SG_MOCK_NOTICE_MAX;
            else if (strcmp(val, "none") == 0)
                o->close_notice = SG_MOCK_NOTICE_NONE;
            else
                return bad(name, val, "expected connection, max or none");
            have_notice = true;
        } else if (strcmp(name, "--close-delay-ms") == 0) {
            if (!parse_double(val, 0, 86400e3, &d))
                return bad(name, val, "expected milliseconds >= 0");
            o->close_delay_ns = (int64_t)(d * 1e6);
            have_delay = true;
        } else if (strcmp(name, "--io-backend") == 0) {
            if ((o->io_backend = sg_io_backend_parse(val)) < 0)
                return bad(name, val, "expected auto, io_uring or epoll");
        } else if (strcmp(name, "--max-batch") == 0) {
            if (!parse_uint(val, 1000000, &u))
                return bad(name, val, "expected a whole number of sequences, 0 (no limit) to 1000000");
            o->max_batch = (uint32_t)u;
        } else if (strcmp(name, "--prefill-ms-per-token") == 0) {
            if (!parse_double(val, 0, 1e6, &d))
                return bad(name, val, "expected milliseconds >= 0");
            o->prefill_ms_per_token = d;
        } else if (strcmp(name, "--reasoning-tokens") == 0) {
            if (!parse_uint(val, SG_MOCK_MAX_TOKENS, &u))
                return bad(name, val, "expected a token count 0..1048576");
            o->reasoning_tokens = (uint32_t)u;
        } else if (strcmp(name, "--reasoning-field") == 0) {
            if (strcmp(val, "reasoning_content") == 0)
                o->reasoning_field_short = false;
            else if (strcmp(val, "reasoning") == 0)
                o->reasoning_field_short = true;
            else
                return bad(name, val, "expected reasoning_content or reasoning");
        } else if (strcmp(name, "--tool-call-rate") == 0) {
            if (!parse_double(val, 0, 1, &o->tool_call_rate))
                return bad(name, val, "expected a fraction 0..1");
        } else if (strcmp(name, "--embedding-dim") == 0) {
            if (!parse_uint(val, SG_MOCK_MAX_EMBEDDING_DIM, &u) || u == 0)
                return bad(name, val, "expected a dimension 1..16384");
            o->embedding_dim = (uint32_t)u;
        } else if (strcmp(name, "--fault") == 0) {
            if (o->n_faults == SG_MOCK_MAX_FAULTS)
                return bad(name, val, "at most 16 --fault flags");
            const char *why = sg_mock_fault_parse(val, &o->faults[o->n_faults]);
            if (why)
                return bad(name, val, why);
            o->n_faults++;
        } else if (strcmp(name, "--fault-origin") == 0) {
            if (strcmp(val, "start") == 0 || strcmp(val, "request") == 0)
                o->fault_from_request = val[0] == 'r';
            else
                return bad(name, val, "expected start or request");
        } else if (strcmp(name, "--exit-after") == 0) {
            if (!parse_double(val, 0, 1e9, &d) || d <= 0)
                return bad(name, val, "expected seconds > 0");
            o->exit_after_s = d;
        }
    }
    if (!o->tls_cert != !o->tls_key)
        return bad(o->tls_cert ? "--tls-cert" : "--tls-key", NULL,
                   "needs its partner: give both --tls-cert and --tls-key");
    if (o->tls_cert)
        o->tls = true;
    if (o->tls_cert_out && (!o->tls || o->tls_cert))
        return bad("--tls-cert-out", NULL, "only applies to the self-signed certificate of --tls without --tls-cert");
    if ((have_notice || have_delay) && !o->close_after)
        return bad(have_notice ? "--close-notice" : "--close-delay-ms", NULL,
                   "needs --close-after (the responses a connection serves)");
    double per_req = 0, per_conn = 0;
    unsigned crashes = 0, read_stalls = 0;
    for (unsigned k = 0; k < o->n_faults; k++) {
        const sg_mock_fault_t *f = &o->faults[k];
        if (sg_mock_fault_per_request(f->kind))
            per_req += f->fraction;
        else if (sg_mock_fault_per_conn(f->kind))
            per_conn += f->fraction;
        crashes += f->kind == SG_MOCK_FAULT_CRASH;
        read_stalls += f->kind == SG_MOCK_FAULT_STALL_READ;
    }
    if (per_req > 1 + 1e-9)
        return bad("--fault", NULL, "the per-request faults' fractions add up to more than 1");
    if (per_conn > 1 + 1e-9)
        return bad("--fault", NULL, "the per-connection faults' fractions add up to more than 1");
    if (crashes > 1 || read_stalls > 1)
        return bad("--fault", NULL, crashes > 1 ? "at most one crash" : "at most one stall-read");
    if (have_stall_start && !have_stall)
        return bad("--stall-start-ms", NULL, "needs --stall-ms (the length of the window)");
    return 0;
}
