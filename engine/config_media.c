/*
 * The media flags (AIPerf's --image-* and --audio-*, workload/sg_media.h) checked against the rest of the
 * configuration once it is parsed, and echoed into input_config. Apart from config.c so that its one switch only
 * hands each flag to sg_media_option.
 */
#include "sg_config.h"
#include "config_int.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

__attribute__((format(printf, 2, 3))) static int fail(const char *opt, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "surge: --%s: %s\n", opt, msg);
    return SG_EINVAL;
}

int sg_config_check_media(const sg_config_t *cfg)
{
    const sg_media_spec_t *m = &cfg->media;
    bool images = sg_media_images(m), audio = sg_media_audio(m);
    bool retrieval = !cfg->triton && cfg->endpoint_type == SG_OAI_IMAGE_RETRIEVAL;
    if (retrieval && cfg->streaming)
        return fail("streaming", "image_retrieval answers whole (GenAI-Perf refuses --streaming for it too)");
    if (!m->first_flag) {
        if (retrieval && !cfg->input_file)
            return fail("endpoint-type",
                        "image_retrieval sends images: give --image-width-mean and --image-height-mean (synthetic "
                        "images), or an --input-file whose lines name \"image\" or \"images\"");
        return 0;
    }
    if (m->image_batch && (m->image_w_mean > 0) != (m->image_h_mean > 0))
        return fail(m->image_w_mean > 0 ? "image-width-mean" : "image-height-mean",
                    "synthetic images need both --image-width-mean and --image-height-mean above 0");
    if (m->image_flag && !images && m->image_batch)
        return fail(m->image_flag, "shapes synthetic images, which need --image-width-mean and --image-height-mean "
                                   "above 0");
    if (m->audio_flag && !audio && m->audio_batch)
        return fail(m->audio_flag, "shapes synthetic audio, which needs --audio-length-mean above 0");
    if (!images && !audio) {
        if (retrieval && !cfg->input_file)
            return fail(m->first_flag, "image_retrieval sends images: give --image-width-mean and "
                                       "--image-height-mean above 0 (and --image-batch-size 1 or more)");
        return 0;
    }
    if (cfg->input_file)
        return fail(m->first_flag, "shapes synthetic media; --input-file names its own (\"image\", \"images\", "
                                   "\"audio\", \"audios\"), as in AIPerf");
    if (cfg->sessions)
        return fail(m->first_flag, "images and audio are not supported in multi-turn sessions");
    if (cfg->triton)
        return fail(m->first_flag, "images and audio go in OpenAI chat requests, not KServe gRPC calls");
    if (cfg->endpoint_type != SG_OAI_CHAT && !retrieval)
        return fail(m->first_flag,
                    "images and audio go in chat requests (--endpoint-type chat), or images alone in "
                    "image_retrieval; not in %s",
                    sg_endpoint(cfg->endpoint_type)->name);
    if (retrieval && audio)
        return fail("audio-length-mean", "image_retrieval takes images only");
    if (retrieval && !images)
        return fail(m->first_flag, "image_retrieval sends images: give --image-width-mean and --image-height-mean");
    return 0;
}

void sg_echo_media(json_t *out, const sg_config_t *cfg)
{
    const sg_media_spec_t *m = &cfg->media;
    json_t *o = m->first_flag ? json_object() : NULL;
    if (!o)
        return;
    static const char *const fmts[] = {"png", "jpeg", "random"};
    if (sg_media_images(m)) {
        json_object_set_new(o, "image_width_mean", json_real(m->image_w_mean));
        json_object_set_new(o, "image_width_stddev", json_real(m->image_w_stddev));
        json_object_set_new(o, "image_height_mean", json_real(m->image_h_mean));
        json_object_set_new(o, "image_height_stddev", json_real(m->image_h_stddev));
        json_object_set_new(o, "image_format", json_string(fmts[m->image_format]));
        json_object_set_new(o, "image_batch_size", json_integer(m->image_batch));
    }
    if (sg_media_audio(m)) {
        json_object_set_new(o, "audio_length_mean", json_real(m->audio_len_mean));
        json_object_set_new(o, "audio_length_stddev", json_real(m->audio_len_stddev));
        json_object_set_new(o, "audio_format", json_string("wav"));
        json_object_set_new(o, "audio_batch_size", json_integer(m->audio_batch));
        json_t *rates = json_array(), *depths = json_array();
        for (uint32_t i = 0; i < m->n_rates; i++)
            json_array_append_new(rates, json_integer(m->audio_rates[i]));
        for (uint32_t i = 0; i < m->n_depths; i++)
            json_array_append_new(depths, json_integer(m->audio_depths[i]));
        json_object_set_new(o, "audio_sample_rates_hz", rates);
        json_object_set_new(o, "audio_depths", depths);
        json_object_set_new(o, "audio_num_channels", json_integer(m->audio_channels));
    }
    json_object_set_new(out, "media", o);
}
