/*
 * The console's GPU telemetry lines, from the summary's "gpu_telemetry" object (metrics/srvmetrics.c,
 * sg_srvm_gpu_json), so that the console and the files cannot disagree: per GPU its utilisation (avg / max), memory
 * used (max), power (avg), energy over the load phase and SM clock (avg), then tokens per joule over every GPU.
 */
#include "sg_metrics.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* A statistic of one of the GPU's gauges as text ("-" when the exporter did not have it). */
static void stat(char *buf, size_t cap, const json_t *gpu, const char *known, const char *key, int decimals)
{
    const json_t *v = json_object_get(json_object_get(gpu, known), key);
    if (json_is_number(v))
        snprintf(buf, cap, "%.*f", decimals, json_number_value(v));
    else
        snprintf(buf, cap, "-");
}

void sg_export_gpu_table(FILE *out, const char *gpu_json)
{
    if (!gpu_json)
        return;
    json_t *root = json_loads(gpu_json, 0, NULL);
    const json_t *gpus = json_object_get(root, "gpus");
    if (!json_is_array(gpus) || json_array_size(gpus) == 0) {
        json_decref(root);
        return;
    }
    const char *src = json_string_value(json_object_get(root, "energy_source"));
    fprintf(out, "GPU telemetry (DCGM exporter, %zu GPU%s; energy %s):\n", json_array_size(gpus),
            json_array_size(gpus) == 1 ? "" : "s",
            !src                                 ? "not known for every GPU"
            : strcmp(src, "energy_counter") == 0 ? "from the energy counter"
            : strcmp(src, "power_integral") == 0 ? "from the power gauge, integrated"
                                                 : "from the energy counter, or the power gauge where none");
    fprintf(out, "  %-4s %-28s %16s %14s %12s %12s %14s\n", "GPU", "model", "util avg/max %", "mem used max",
            "power avg W", "energy J", "SM clock MHz");
    size_t i;
    const json_t *g;
    json_array_foreach(gpus, i, g)
    {
        char ua[24], um[24], mem[24], pw[24], en[24], clk[24], util[52], model[29];
        stat(ua, sizeof ua, g, "gpu_utilization", "avg", 1);
        stat(um, sizeof um, g, "gpu_utilization", "max", 1);
        stat(mem, sizeof mem, g, "gpu_memory_used", "max", 0);
        stat(pw, sizeof pw, g, "gpu_power", "avg", 1);
        stat(clk, sizeof clk, g, "gpu_sm_clock", "avg", 0);
        const json_t *e = json_object_get(json_object_get(g, "energy"), "value");
        if (json_is_number(e))
            snprintf(en, sizeof en, "%.1f", json_number_value(e));
        else
            snprintf(en, sizeof en, "-");
        snprintf(util, sizeof util, "%s / %s", ua, um);
        const char *name = json_string_value(json_object_get(g, "model_name"));
        snprintf(model, sizeof model, "%s", name && *name ? name : "-");
        const char *idx = json_string_value(json_object_get(g, "gpu"));
        fprintf(out, "  %-4s %-28s %16s %10s MiB %12s %12s %14s\n", idx && *idx ? idx : "?", model, util, mem, pw, en,
                clk);
    }
    const json_t *tpj = json_object_get(root, "tokens_per_joule");
    const json_t *ej = json_object_get(root, "energy_j");
    if (json_is_number(tpj) && json_is_number(ej))
        fprintf(out, "Output tokens per joule: %.4g (%" JSON_INTEGER_FORMAT " output tokens / %.1f J over %s)\n",
                json_number_value(tpj), json_integer_value(json_object_get(root, "output_tokens")),
                json_number_value(ej), json_array_size(gpus) == 1 ? "the GPU" : "every GPU");
    json_decref(root);
}
