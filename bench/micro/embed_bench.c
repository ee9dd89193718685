/*
 * Micro-benchmark: µs per sg_oai_decode of an embeddings body (one vector of N floats, printed as the bundled mock
 * prints them) with each number-array checker this CPU has, beside a completions body of the same size (its text
 * as long as the vector), best of 9 rounds. Built with the project, run by hand:
 *   build/micro/embed_bench [floats (1024)] [iterations (20000)]
 */
#include "json_scan.h"
#include "sg_openai.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double best_us(sg_oai_kind_t kind, const char *body, size_t len, int iters)
{
    double best = 1e30;
    for (int round = 0; round < 9; round++) {
        double t0 = now();
        for (int i = 0; i < iters; i++) {
            sg_oai_result_t r;
            if (sg_oai_decode(kind, body, len, &r) != 0) {
                fprintf(stderr, "embed_bench: a body did not decode\n");
                exit(1);
            }
            __asm__ volatile("" : : "r"(&r) : "memory");
        }
        double us = (now() - t0) / iters * 1e6;
        best = us < best ? us : best;
    }
    return best;
}

int main(int argc, char **argv)
{
    int floats = argc > 1 ? atoi(argv[1]) : 1024, iters = argc > 2 ? atoi(argv[2]) : 20000;
    if (floats < 1 || floats > 100000 || iters < 1) {
        fprintf(stderr, "usage: embed_bench [floats (1 to 100000)] [iterations]\n");
        return 2;
    }
    size_t cap = (size_t)floats * 16 + 512, n = 0;
    char *emb = malloc(cap), *comp = malloc(cap);
    if (!emb || !comp)
        return 1;
    n += (size_t)snprintf(emb + n, cap - n,
                          "{\"object\":\"list\",\"data\":[{\"object\":\"embedding\",\"index\":0,"
                          "\"embedding\":[");
    for (int i = 0; i < floats; i++)
        n += (size_t)snprintf(emb + n, cap - n, "%s%.6f", i ? "," : "", 0.045 * sin(0.37 * i));
    n += (size_t)snprintf(emb + n, cap - n,
                          "]}],\"model\":\"bench\",\"usage\":{\"prompt_tokens\":100,"
                          "\"total_tokens\":100}}");
    size_t m = (size_t)snprintf(comp, cap,
                                "{\"id\":\"mock-7\",\"object\":\"text_completion\",\"created\":1795248338,"
                                "\"model\":\"bench\",\"choices\":[{\"index\":0,\"text\":\"");
    size_t tail = strlen("\",\"logprobs\":null,\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":100,"
                         "\"completion_tokens\":2749,\"total_tokens\":2849}}");
    static const char *const words[] = {" the", " of", " and", " to", " in", " is", " that", " for"};
    for (int i = 0; m + 8 + tail < n; i++)
        m += (size_t)snprintf(comp + m, cap - m, "%s", words[i % 8]);
    m += (size_t)snprintf(comp + m, cap - m,
                          "\",\"logprobs\":null,\"finish_reason\":\"length\"}],\"usage\":"
                          "{\"prompt_tokens\":100,\"completion_tokens\":2749,\"total_tokens\":2849}}");

    double base = best_us(SG_OAI_COMPLETIONS, comp, m, iters);
    printf("completions body, %zu bytes: %.3f us\n", m, base);
    static const char *const names[] = {"scalar", "SSE2", "AVX2", "AVX-512BW", "AVX-512 VBMI"};
    for (int isa = SG_JS_NUMBERS_SCALAR; isa <= SG_JS_NUMBERS_AVX512VBMI; isa++) {
        if (!sg_js_number_list_use(isa))
            continue;
        double us = best_us(SG_OAI_EMBEDDINGS, emb, n, iters);
        printf("embeddings body, %d floats, %zu bytes, %-12s %.3f us (%.2fx)\n", floats, n, names[isa], us, us / base);
    }
    sg_js_number_list_use(-1);
    free(emb);
    free(comp);
    return 0;
}
