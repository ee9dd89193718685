/*
 * Micro-benchmark: ns per sg_oai_decode of the bodies the bundled mock sends (a whole chat response, the two
 * streamed chunk shapes, a completions response). Built with the project, run by hand:
 *   build/micro/decode_bench [iterations]
 */
#include "sg_openai.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const bodies[][2] = {
    {"chat body", "{\"id\":\"mock-12345\",\"object\":\"chat.completion\",\"created\":1795248338,\"model\":\"bench\","
                  "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\" the\"},"
                  "\"logprobs\":null,\"finish_reason\":\"length\"}],"
                  "\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":1,\"total_tokens\":101}}"},
    {"sse first", "{\"id\":\"mock-1\",\"object\":\"chat.completion.chunk\",\"created\":1795248338,\"model\":\"bench\","
                  "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,"
                  "\"finish_reason\":null}]}"},
    {"sse token", "{\"id\":\"mock-1\",\"object\":\"chat.completion.chunk\",\"created\":1795248338,\"model\":\"bench\","
                  "\"choices\":[{\"index\":0,\"delta\":{\"content\":\" the\"},\"logprobs\":null,"
                  "\"finish_reason\":null}]}"},
    {"completions", "{\"id\":\"mock-7\",\"object\":\"text_completion\",\"created\":1795248338,\"model\":\"bench\","
                    "\"choices\":[{\"index\":0,\"text\":\" the quick brown fox\",\"logprobs\":null,"
                    "\"finish_reason\":\"length\"}],"
                    "\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":4,\"total_tokens\":104}}"},
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    long iters = argc > 1 ? atol(argv[1]) : 2000000;
    volatile int64_t sink = 0;
    for (size_t b = 0; b < sizeof bodies / sizeof bodies[0]; b++) {
        const char *s = bodies[b][1];
        size_t len = strlen(s);
        sg_oai_kind_t kind = b == 3 ? SG_OAI_COMPLETIONS : SG_OAI_CHAT;
        double best = 1e30;
        for (int rep = 0; rep < 5; rep++) {
            double t0 = now();
            for (long i = 0; i < iters; i++) {
                sg_oai_result_t r;
                if (sg_oai_decode(kind, s, len, &r) != 0)
                    abort();
                sink += (int64_t)r.content.len + r.completion_tokens;
            }
            double ns = (now() - t0) / (double)iters;
            best = ns < best ? ns : best;
        }
        printf("%-12s %4zu bytes  %6.1f ns/body  %5.2f ns/byte\n", bodies[b][0], len, best, best / (double)len);
    }
    return sink == -1; /* read once, so the decode results count as used */
}
