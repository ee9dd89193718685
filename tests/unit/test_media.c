/*
 * Images and audio (workload/media.c, proto/media_probe.c): base64 against RFC 4648's vectors; PNG and JPEG
 * encoded here and decoded back with libpng and libjpeg; WAV header fields; the synthetic draws; AIPerf's flags and
 * their refusals; files and URLs an input file names; the mock's probe and token formula on real encoder output;
 * the chat and image_retrieval bodies the payload table renders, and the mock's scan of them.
 */
#include "sg_api_request.h"
#include "sg_input.h"
#include "sg_media.h"
#include "sg_media_probe.h"
#include "sg_openai.h"
#include "sg_workload.h"
#include "test.h"

#include <jansson.h>
#include <jpeglib.h>
#include <png.h>
#include <stdlib.h>
#include <unistd.h>

static void test_base64(void)
{
    static const char *const in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const want[] = {"p:", "p:Zg==", "p:Zm8=", "p:Zm9v", "p:Zm9vYg==", "p:Zm9vYmE=", "p:Zm9vYmFy"};
    for (size_t i = 0; i < SG_ARRAY_LEN(in); i++) {
        size_t n;
        char *s = sg_base64("p:", 2, (const uint8_t *)in[i], strlen(in[i]), &n);
        CHECK(s != NULL);
        if (s)
            CHECK_EQ_STR(s, n, want[i]);
        free(s);
    }
    /* every byte value survives: the probe's random-access decoder reads each back */
    uint8_t all[256];
    for (int i = 0; i < 256; i++)
        all[i] = (uint8_t)i;
    size_t n;
    char *s = sg_base64("", 0, all, sizeof all, &n);
    CHECK_EQ_INT(n, (256 + 2) / 3 * 4);
    sg_media_info_t info;
    sg_media_probe_audio(s, n, &info); /* not a WAV: unknown, but its decoded size is exact */
    CHECK_EQ_INT(info.bytes, 256);
    CHECK(!info.known);
    free(s);
}

static uint8_t *noise(uint32_t w, uint32_t h, uint64_t seed)
{
    sg_rng_t r;
    sg_rng_seed(&r, seed, 1);
    uint8_t *p = malloc((size_t)w * h * 3);
    for (size_t i = 0; p && i < (size_t)w * h * 3; i++)
        p[i] = (uint8_t)sg_rng_next(&r);
    return p;
}

static void test_png(void)
{
    const uint32_t w = 37, h = 19;
    uint8_t *rgb = noise(w, h, 1);
    uint8_t *file = NULL;
    size_t len = 0;
    CHECK_EQ_INT(sg_png_encode(rgb, w, h, &file, &len), 0);
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    CHECK(png_image_begin_read_from_memory(&img, file, len));
    CHECK_EQ_INT(img.width, w);
    CHECK_EQ_INT(img.height, h);
    img.format = PNG_FORMAT_RGB;
    uint8_t *back = malloc(PNG_IMAGE_SIZE(img));
    CHECK(png_image_finish_read(&img, NULL, back, 0, NULL));
    CHECK(memcmp(back, rgb, (size_t)w * h * 3) == 0); /* lossless */
    /* the mock's probe reads the size from the data URL, and the token formula counts 28-pixel patches */
    size_t ul;
    char *url = sg_base64("data:image/png;base64,", 22, file, len, &ul);
    sg_media_info_t info;
    sg_media_probe_image_url(url, ul, &info);
    CHECK(info.known);
    CHECK_EQ_INT(info.w, w);
    CHECK_EQ_INT(info.h, h);
    CHECK_EQ_INT(info.bytes, len);
    CHECK_EQ_INT(sg_media_image_tokens(info.w, info.h), 2 * 1);
    CHECK_EQ_INT(sg_media_image_tokens(56, 57), 2 * 3);
    CHECK_EQ_INT(sg_png_encode(rgb, 0, h, &file, &len), SG_EINVAL);
    free(url);
    free(back);
    free(file);
    free(rgb);
}

static void test_jpeg(void)
{
    const uint32_t w = 100, h = 61;
    uint8_t *rgb = noise(w, h, 2);
    uint8_t *file = NULL;
    size_t len = 0;
    CHECK_EQ_INT(sg_jpeg_encode(rgb, w, h, 85, &file, &len), 0);
    struct jpeg_decompress_struct d;
    struct jpeg_error_mgr jerr;
    d.err = jpeg_std_error(&jerr);
    jpeg_create_decompress(&d);
    jpeg_mem_src(&d, file, len);
    CHECK_EQ_INT(jpeg_read_header(&d, TRUE), JPEG_HEADER_OK);
    jpeg_start_decompress(&d);
    CHECK_EQ_INT(d.output_width, w);
    CHECK_EQ_INT(d.output_height, h);
    CHECK_EQ_INT(d.output_components, 3);
    uint8_t *row = malloc((size_t)w * 3);
    while (d.output_scanline < d.output_height) {
        JSAMPROW r = row;
        jpeg_read_scanlines(&d, &r, 1);
    }
    jpeg_finish_decompress(&d);
    jpeg_destroy_decompress(&d);
    free(row);
    /* libjpeg's file has a JFIF APP0 and tables before its SOF: the probe walks the segments to it */
    size_t ul;
    char *url = sg_base64("data:image/jpeg;base64,", 23, file, len, &ul);
    sg_media_info_t info;
    sg_media_probe_image_url(url, ul, &info);
    CHECK(info.known);
    CHECK_EQ_INT(info.w, w);
    CHECK_EQ_INT(info.h, h);
    free(url);
    free(file);
    free(rgb);
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void test_wav(void)
{
    sg_rng_t r;
    sg_rng_seed(&r, 3, 1);
    uint8_t *f = NULL;
    size_t len = 0;
    CHECK_EQ_INT(sg_wav_encode(&r, 44100, 24, 2, 4410, &f, &len), 0);
    CHECK_EQ_INT(len, 44 + 4410 * 6);
    CHECK(memcmp(f, "RIFF", 4) == 0 && memcmp(f + 8, "WAVEfmt ", 8) == 0 && memcmp(f + 36, "data", 4) == 0);
    CHECK_EQ_INT(le32(f + 4), len - 8);
    CHECK_EQ_INT(le32(f + 16), 16);
    CHECK_EQ_INT(f[20] | f[21] << 8, 1); /* PCM */
    CHECK_EQ_INT(f[22] | f[23] << 8, 2); /* channels */
    CHECK_EQ_INT(le32(f + 24), 44100);
    CHECK_EQ_INT(le32(f + 28), 44100 * 6); /* byte rate */
    CHECK_EQ_INT(f[32] | f[33] << 8, 6);   /* block align */
    CHECK_EQ_INT(f[34] | f[35] << 8, 24);  /* bits */
    CHECK_EQ_INT(le32(f + 40), 4410 * 6);
    size_t bl;
    char *b = sg_base64("", 0, f, len, &bl);
    sg_media_info_t info;
    sg_media_probe_audio(b, bl, &info);
    CHECK(info.known);
    CHECK_NEAR(info.seconds, 0.1, 1e-9);
    CHECK_EQ_INT(sg_media_audio_tokens(info.seconds), 3); /* ceil(0.1 s x 25) */
    free(b);
    /* a LIST chunk before data (as ffmpeg writes): the probe walks the chunks */
    uint8_t g[44 + 26 + 800];
    memcpy(g, f, 36);
    memcpy(g + 36, "LIST", 4);
    g[40] = 18, g[41] = g[42] = g[43] = 0;
    memset(g + 44, 'x', 18);
    memcpy(g + 62, "data", 4);
    g[66] = 800 & 0xff, g[67] = 800 >> 8, g[68] = g[69] = 0;
    memset(g + 70, 0, 800);
    b = sg_base64("", 0, g, sizeof g, &bl);
    sg_media_probe_audio(b, bl, &info);
    CHECK(info.known);
    CHECK_NEAR(info.seconds, 800.0 / (44100 * 6), 1e-12);
    free(b);
    CHECK_EQ_INT(sg_wav_encode(&r, 16000, 12, 1, 10, &f, &len), SG_EINVAL);
    free(f);
}

static void test_options(void)
{
    sg_media_spec_t m;
    sg_media_defaults(&m);
    char err[256];
    CHECK(!sg_media_images(&m) && !sg_media_audio(&m));
    CHECK_EQ_INT(sg_media_option(&m, "isl", "3", err, sizeof err), 1); /* not a media flag */
    CHECK_EQ_INT(sg_media_option(&m, "image-width-mean", "512", err, sizeof err), 0);
    CHECK(!sg_media_images(&m)); /* both sizes, as AIPerf */
    CHECK_EQ_INT(sg_media_option(&m, "image-height-mean", "256.5", err, sizeof err), 0);
    CHECK(sg_media_images(&m));
    CHECK_EQ_INT(sg_media_option(&m, "image-format", "JPEG", err, sizeof err), 0);
    CHECK_EQ_INT(m.image_format, SG_IMG_JPEG);
    CHECK_EQ_INT(sg_media_option(&m, "batch-size-image", "3", err, sizeof err), 0);
    CHECK_EQ_INT(m.image_batch, 3);
    CHECK_EQ_INT(sg_media_option(&m, "audio-sample-rates", "16,44.1", err, sizeof err), 0);
    CHECK_EQ_INT(m.n_rates, 2);
    CHECK_EQ_INT(m.audio_rates[1], 44100);
    CHECK_EQ_INT(sg_media_option(&m, "audio-depths", "8,32", err, sizeof err), 0);
    CHECK_EQ_INT(m.audio_depths[1], 32);
    CHECK(strcmp(m.first_flag, "image-width-mean") == 0);
    /* what shapes media, for the refusal of a shape without a size: not a batch size, not a mean of 0 */
    sg_media_spec_t z;
    sg_media_defaults(&z);
    CHECK_EQ_INT(sg_media_option(&z, "image-width-mean", "0", err, sizeof err), 0);
    CHECK_EQ_INT(sg_media_option(&z, "audio-batch-size", "2", err, sizeof err), 0);
    CHECK(z.image_flag == NULL && z.audio_flag == NULL && z.first_flag != NULL);
    CHECK_EQ_INT(sg_media_option(&z, "audio-num-channels", "2", err, sizeof err), 0);
    CHECK(z.audio_flag && strcmp(z.audio_flag, "audio-num-channels") == 0);
    static const struct {
        const char *name, *arg, *says;
    } bad[] = {
        {"image-width-mean", "-3", "from 0 to 16384"},
        {"image-height-stddev", "x", "from 0 to 16384"},
        {"image-format", "gif", "png, jpeg or random"},
        {"image-batch-size", "65", "from 0 to 64"},
        {"audio-length-mean", "-1", "from 0 to 3600"},
        {"audio-format", "mp3", "WAV only"},
        {"audio-format", "flac", "expected wav"},
        {"audio-sample-rates", "0.5", "from 1 to 384"},
        {"audio-sample-rates", "16;8", "separated by commas"},
        {"audio-depths", "12", "8, 16, 24 or 32"},
        {"audio-num-channels", "3", "from 1 to 2"},
    };
    for (size_t i = 0; i < SG_ARRAY_LEN(bad); i++) {
        err[0] = '\0';
        CHECK_EQ_INT(sg_media_option(&m, bad[i].name, bad[i].arg, err, sizeof err), SG_EINVAL);
        if (!strstr(err, bad[i].says) || !strstr(err, bad[i].name))
            fprintf(stderr, "test_media: --%s %s said \"%s\"\n", bad[i].name, bad[i].arg, err);
        CHECK(strstr(err, bad[i].says) && strstr(err, bad[i].name));
    }
}

static void test_synth(void)
{
    sg_media_spec_t m;
    sg_media_defaults(&m);
    m.image_w_mean = 64;
    m.image_h_mean = 30;
    m.image_format = SG_IMG_RANDOM;
    m.audio_len_mean = 0.25;
    m.audio_rates[0] = 8000;
    m.audio_depths[0] = 8;
    sg_rng_t r;
    sg_rng_seed(&r, 9, 1);
    char err[256];
    sg_media_item_t a, b;
    int png = 0, jpeg = 0;
    for (int i = 0; i < 16; i++) {
        CHECK_EQ_INT(sg_media_synth_image(&m, &r, &a, err, sizeof err), 0);
        png += strcmp(a.fmt, "png") == 0;
        jpeg += strcmp(a.fmt, "jpeg") == 0;
        sg_media_info_t info;
        sg_media_probe_image_url(a.text, a.len, &info);
        CHECK(info.known && info.w == 64 && info.h == 30);
        if (i == 0) {
            b = a;
            continue;
        }
        CHECK(a.len != b.len || memcmp(a.text, b.text, a.len) != 0); /* noise: never the same image twice */
        sg_media_item_free(&a);
    }
    CHECK(png > 0 && jpeg > 0); /* random: both formats drawn */
    sg_media_item_free(&b);
    CHECK_EQ_INT(sg_media_synth_audio(&m, &r, &a, err, sizeof err), 0);
    CHECK(strcmp(a.fmt, "wav") == 0);
    CHECK_NEAR(a.seconds, 0.25, 1e-9);
    sg_media_info_t info;
    sg_media_probe_audio(a.text, a.len, &info);
    CHECK(info.known);
    CHECK_EQ_INT(info.bytes, 44 + 2000);
    CHECK_NEAR(info.seconds, 0.25, 1e-9);
    sg_media_item_free(&a);
}

static void test_refs(void)
{
    char dir[] = "/tmp/surge-media-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char png[64], txt[64];
    snprintf(png, sizeof png, "%s/a.png", dir);
    snprintf(txt, sizeof txt, "%s/a.txt", dir);
    uint8_t *rgb = noise(5, 7, 4), *file = NULL;
    size_t len = 0;
    CHECK_EQ_INT(sg_png_encode(rgb, 5, 7, &file, &len), 0);
    FILE *f = fopen(png, "wb");
    fwrite(file, 1, len, f);
    fclose(f);
    f = fopen(txt, "w");
    fputs("hello", f);
    fclose(f);
    char err[512];
    sg_media_item_t it;
    CHECK_EQ_INT(sg_media_from_ref(png, strlen(png), SG_MEDIA_IMAGE, &it, err, sizeof err), 0);
    CHECK(strncmp(it.text, "data:image/png;base64,", 22) == 0 && strcmp(it.fmt, "png") == 0);
    sg_media_info_t info;
    sg_media_probe_image_url(it.text, it.len, &info);
    CHECK(info.known && info.w == 5 && info.h == 7 && info.bytes == len);
    sg_media_item_free(&it);
    const char *url = "https://example.com/cat.jpg";
    CHECK_EQ_INT(sg_media_from_ref(url, strlen(url), SG_MEDIA_IMAGE, &it, err, sizeof err), 0);
    CHECK_EQ_STR(it.text, it.len, url); /* passed through: the server fetches it */
    sg_media_probe_image_url(it.text, it.len, &info);
    CHECK(!info.known && info.bytes == 0);
    sg_media_item_free(&it);
    const char *data = "data:audio/wav;base64,UklGRg==";
    CHECK_EQ_INT(sg_media_from_ref(data, strlen(data), SG_MEDIA_AUDIO, &it, err, sizeof err), 0);
    CHECK_EQ_STR(it.text, it.len, "UklGRg==");
    CHECK(strcmp(it.fmt, "wav") == 0);
    sg_media_item_free(&it);
    /* refusals name the file and the problem */
    char missing[80];
    snprintf(missing, sizeof missing, "%s/none.png", dir);
    CHECK_EQ_INT(sg_media_from_ref(missing, strlen(missing), SG_MEDIA_IMAGE, &it, err, sizeof err), SG_EINVAL);
    CHECK(strstr(err, missing) && strstr(err, "No such file"));
    CHECK_EQ_INT(sg_media_from_ref(txt, strlen(txt), SG_MEDIA_IMAGE, &it, err, sizeof err), SG_EINVAL);
    CHECK(strstr(err, txt) && strstr(err, "not a PNG, JPEG"));
    CHECK_EQ_INT(sg_media_from_ref(png, strlen(png), SG_MEDIA_AUDIO, &it, err, sizeof err), SG_EINVAL);
    CHECK(strstr(err, "not WAV or MP3"));
    CHECK_EQ_INT(sg_media_from_ref(dir, strlen(dir), SG_MEDIA_IMAGE, &it, err, sizeof err), SG_EINVAL);
    CHECK(strstr(err, "not a regular file"));
    const char *aurl = "http://example.com/a.wav";
    CHECK_EQ_INT(sg_media_from_ref(aurl, strlen(aurl), SG_MEDIA_AUDIO, &it, err, sizeof err), SG_EINVAL);
    CHECK(strstr(err, "base64 data only"));
    unlink(png);
    unlink(txt);
    rmdir(dir);
    free(file);
    free(rgb);
}

/* The body of p as JSON. */
static json_t *body_of(const sg_payload_t *p)
{
    size_t len;
    const char *b = sg_payload_body(p, &len);
    return b ? json_loadb(b, len, 0, NULL) : NULL;
}

static void test_bodies(void)
{
    const char *models[] = {"vlm"};
    sg_media_spec_t m;
    sg_media_defaults(&m);
    m.image_w_mean = 40;
    m.image_h_mean = 40;
    m.image_w_stddev = 10;
    m.image_batch = 2;
    m.audio_len_mean = 0.2;
    sg_workload_spec_t spec = {
        .host_header = "127.0.0.1:8000",
        .path = "/v1/chat/completions",
        .kind = SG_OAI_CHAT,
        .models = models,
        .n_models = 1,
        .num_prompts = 3,
        .isl_mean = 5,
        .osl_mean = 4,
        .seed = 7,
        .media = &m,
        .media_requests = 10,
    };
    sg_payload_table_t t;
    char err[512];
    CHECK_EQ_INT(sg_workload_build(&spec, &t, err, sizeof err), 0);
    /* the table grew to one entry per request (10 fit the pool): no image repeats within the run */
    CHECK_EQ_INT(t.n_entries, 10);
    for (size_t i = 0; i < t.n; i++) {
        const sg_payload_t *p = &t.items[i];
        CHECK_EQ_INT(p->images, 2);
        CHECK_EQ_INT(p->audios, 1);
        json_t *b = body_of(p);
        json_t *content = json_object_get(json_array_get(json_object_get(b, "messages"), 0), "content");
        CHECK_EQ_INT(json_array_size(content), 4);
        CHECK(strcmp(json_string_value(json_object_get(json_array_get(content, 0), "type")), "text") == 0);
        CHECK(strcmp(json_string_value(json_object_get(json_array_get(content, 1), "type")), "image_url") == 0);
        const char *u =
            json_string_value(json_object_get(json_object_get(json_array_get(content, 2), "image_url"), "url"));
        CHECK(u && strncmp(u, "data:image/png;base64,", 22) == 0);
        json_t *audio = json_object_get(json_array_get(content, 3), "input_audio");
        CHECK(strcmp(json_string_value(json_object_get(audio, "format")), "wav") == 0);
        /* what the mock reads from it: counts, sizes and bytes */
        size_t bl;
        const char *raw = sg_payload_body(p, &bl);
        sg_oai_request_t r;
        CHECK_EQ_INT(sg_oai_scan_request(SG_OAI_CHAT, raw, bl, &r), 0);
        CHECK_EQ_INT(r.media.images, 2);
        CHECK_EQ_INT(r.media.images_sized, 2);
        CHECK_EQ_INT(r.media.audios, 1);
        CHECK_EQ_INT(r.media.audios_timed, 1);
        CHECK_EQ_INT(r.prompt_words, 5);
        CHECK(r.media.tokens >= 5 + 2 * 1); /* ceil(0.2 x 25) and at least one patch per image */
        CHECK(p->media_bytes > r.media.bytes && p->media_bytes < r.media.bytes * 4 / 3 + 100);
        json_decref(b);
    }
    char *summary = sg_media_summary(&t, 25);
    json_t *s = json_loads(summary, 0, NULL);
    CHECK_EQ_INT(json_integer_value(json_object_get(s, "images")), 50);
    CHECK_EQ_INT(json_integer_value(json_object_get(s, "distinct_media_sets")), 10);
    CHECK_NEAR(json_real_value(json_object_get(s, "sends_per_media_set")), 2.5, 1e-12);
    json_decref(s);
    free(summary);
    sg_workload_free(&t);

    /* the media text goes in after the body is dumped (a placeholder per item); a placeholder spelled elsewhere
     * too (here by --extra-inputs) makes the body be built the slow way, whole and right */
    spec.extra_inputs_json = "{\"note\":\"@@surge-media-0@@\"}";
    spec.num_prompts_given = true;
    CHECK_EQ_INT(sg_workload_build(&spec, &t, err, sizeof err), 0);
    json_t *nb = body_of(&t.items[0]);
    json_t *parts = json_object_get(json_array_get(json_object_get(nb, "messages"), 0), "content");
    const char *u0 = json_string_value(json_object_get(json_object_get(json_array_get(parts, 1), "image_url"), "url"));
    CHECK(u0 && strncmp(u0, "data:image/png;base64,", 22) == 0);
    CHECK(strcmp(json_string_value(json_object_get(nb, "note")), "@@surge-media-0@@") == 0);
    json_decref(nb);
    sg_workload_free(&t);
    spec.extra_inputs_json = NULL;
    spec.num_prompts_given = false;

    /* --num-prompts given: the table keeps its size */
    spec.num_prompts_given = true;
    CHECK_EQ_INT(sg_workload_build(&spec, &t, err, sizeof err), 0);
    CHECK_EQ_INT(t.n_entries, 3);
    sg_workload_free(&t);

    /* image_retrieval: GenAI-Perf's body, no model, no text */
    m.audio_len_mean = 0;
    spec.kind = SG_OAI_IMAGE_RETRIEVAL;
    spec.path = "/v1/infer";
    CHECK_EQ_INT(sg_workload_build(&spec, &t, err, sizeof err), 0);
    json_t *b = body_of(&t.items[0]);
    CHECK_EQ_INT(json_object_size(b), 1);
    json_t *input = json_object_get(b, "input");
    CHECK_EQ_INT(json_array_size(input), 2);
    CHECK(strcmp(json_string_value(json_object_get(json_array_get(input, 1), "type")), "image_url") == 0);
    CHECK(strncmp(json_string_value(json_object_get(json_array_get(input, 1), "url")), "data:image/png;base64,", 22) ==
          0);
    CHECK_EQ_INT(t.items[0].isl, 0);
    CHECK_EQ_INT(t.items[0].inputs, 2);
    size_t bl;
    const char *raw = sg_payload_body(&t.items[0], &bl);
    sg_api_request_t a;
    CHECK_EQ_INT(sg_api_scan_request(SG_OAI_IMAGE_RETRIEVAL, raw, bl, &a), 0);
    CHECK_EQ_INT(a.inputs, 2);
    CHECK_EQ_INT(a.media.images_sized, 2);
    json_decref(b);
    sg_workload_free(&t);
    const char *none = "{\"input\":[]}";
    CHECK_EQ_INT(sg_api_scan_request(SG_OAI_IMAGE_RETRIEVAL, none, strlen(none), &a), SG_EPROTO);

    /* refusals */
    m.image_w_mean = 0;
    CHECK_EQ_INT(sg_workload_build(&spec, &t, err, sizeof err), SG_EINVAL);
    CHECK(strstr(err, "image_retrieval sends images") != NULL);
    m.image_w_mean = 40;
    spec.kind = SG_OAI_COMPLETIONS;
    CHECK_EQ_INT(sg_workload_build(&spec, &t, err, sizeof err), SG_EINVAL);
    CHECK(strstr(err, "not in completions") != NULL);
}

/* The mock's scan of chat parts in their other spellings. */
static void test_scan_parts(void)
{
    const char *body = "{\"messages\":[{\"role\":\"user\",\"content\":[{\"image_url\":\"https://x/y.png\",\"type\":"
                       "\"image_url\"},{\"type\":\"text\",\"text\":\"two words\"},{\"type\":\"input_audio\","
                       "\"input_audio\":{\"format\":\"mp3\",\"data\":\"SUQz\"}},{\"type\":\"image_url\","
                       "\"image_url\":{\"url\":\"data:image/png;base64,aGVsbG8\\/\"}}]}]}";
    sg_oai_request_t r;
    CHECK_EQ_INT(sg_oai_scan_request(SG_OAI_CHAT, body, strlen(body), &r), 0);
    CHECK_EQ_INT(r.prompt_words, 2);
    CHECK_EQ_INT(r.media.images, 2);
    CHECK_EQ_INT(r.media.images_sized, 0); /* a URL, and an escaped "\/" that cannot be read by position */
    CHECK_EQ_INT(r.media.audios, 1);
    CHECK_EQ_INT(r.media.audios_timed, 0); /* MP3: counted, length unknown */
    CHECK_EQ_INT(r.media.bytes, 3);
    CHECK_EQ_INT(r.media.tokens, 0);
}

int main(void)
{
    test_base64();
    test_png();
    test_jpeg();
    test_wav();
    test_options();
    test_synth();
    test_refs();
    test_bodies();
    test_scan_parts();
    return test_finish("test_media");
}
