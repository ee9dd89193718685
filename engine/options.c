/* `surge profile`'s options table: see sg_options.h. */
#define _GNU_SOURCE
#include "sg_options.h"
#include "config_int.h"
#include "sg_config.h"
#include "sg_sched.h"

#include <getopt.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define ALIASES(...) ((const char *const[]){__VA_ARGS__, NULL})
#define OPT(n, v, a, ...)                                                                                              \
    {                                                                                                                  \
        .name = n, .val = v, .has_arg = a, __VA_ARGS__                                                                 \
    }
#define ARG required_argument
#define NOARG no_argument
#define OPTARG optional_argument
/* a typed row's field, its type checked: a pointer comparison of distinct types does not compile */
#define FIELD(f, T) (offsetof(sg_config_t, f) + 0 * sizeof(&((sg_config_t *)0)->f == (T *)0))
#define FLAG(f) .type = SG_OT_FLAG, .field = FIELD(f, bool)
#define U32(f, l, h) .type = SG_OT_U32, .field = FIELD(f, uint32_t), .lo = (l), .hi = (h)
#define U64(f, l) .type = SG_OT_U64, .field = FIELD(f, uint64_t), .lo = (l)
#define NUM(f, what, l, open, h)                                                                                       \
    .type = SG_OT_NUM, .field = FIELD(f, double), .range = what, .lo = (l), .lo_open = (open), .hi = (h)
#define STR(f, what) .type = SG_OT_STR, .field = FIELD(f, char *), .range = what
/* an enum field (an int's size) set to one of the values by its word */
#define ENUM(f, what, words, ...)                                                                                      \
    .type = SG_OT_ENUM,                                                                                                \
    .field = offsetof(sg_config_t, f) + 0 * sizeof(char[sizeof(((sg_config_t *)0)->f) == sizeof(int) ? 1 : -1]),       \
    .range = what, .choices = words, .values = (const int[])                                                           \
    {                                                                                                                  \
        __VA_ARGS__                                                                                                    \
    }
/* a bool of sg_config_t set when the option is given */
#define SET(f) .set = 1 + offsetof(sg_config_t, f) + 0 * sizeof(&((sg_config_t *)0)->f == (bool *)0)
/* the first of several options given, named in parse_state_t for the cross-option rules' messages */
#define FIRST(g) .first = 1 + offsetof(parse_state_t, g) + 0 * sizeof(&((parse_state_t *)0)->g == (const char **)0)
/* the echo (sg_options.h): a custom row's field echoed as a typed one's; a condition; a hook; or why not */
#define ECHO_AS(t, f, T) .echo_type = (t), .field = FIELD(f, T)
#define ECHO_WORDS(f, no, yes) .echo_type = SG_OT_BOOL_WORD, .field = FIELD(f, bool), .choices = ALIASES(no, yes)
#define ECHO_IF(fn) .echo_if = sg_echo_if_##fn
#define ECHO(fn) .echo = sg_echo_##fn
#define NO_ECHO(why) .no_echo = why
#define GIVEN(g) .given = 1 + offsetof(parse_state_t, g) + 0 * sizeof(&((parse_state_t *)0)->g == (bool *)0)

/*
 * The peers' flags we do not implement take optional_argument: whatever form the user typed (--flag, --flag=x,
 * --flag x), we get to explain instead of getopt complaining about the argument first.
 */
const sg_opt_t sg_opt_table[] = {
    OPT("model", OPT_MODEL, ARG, ECHO(models), .short_name = 'm', .flags = SG_OPT_REPEATABLE,
        .help = "  -m, --model NAME              model to benchmark (required); repeat for several\n"),
    OPT("model-selection-strategy", OPT_MODEL_STRATEGY, ARG,
        ENUM(model_strategy, "round_robin or random", ALIASES("round_robin", "random"), SG_MODEL_ROUND_ROBIN,
             SG_MODEL_RANDOM),
        .help = "      --model-selection-strategy {round_robin,random}\n"
                "                                how each prompt gets its model when there are several\n"
                "                                (default: round_robin)\n"),
    /* vLLM: base-url */
    OPT("url", OPT_URL, ARG, ECHO(url), .short_name = 'u', .flags = SG_OPT_REPEATABLE, .aliases = ALIASES("base-url"),
        .help = "  -u, --url URL                 host:port, host (port 80), http://host[:port][/base],\n"
                "                                https://host[:port][/base] (TLS, port 443) or [::1]:port\n"
                "                                (default: localhost:8000; triton: 8001). A base ending in "
                "/v1\n"
                "                                (the OpenAI SDK's base URL) takes chat/completions directly\n"
                "                                Repeat it for several servers (replicas without a load\n"
                "                                balancer, up to 8; same scheme and base path): each worker\n"
                "                                balances its requests over them (--url-strategy), a URL that\n"
                "                                refuses connections is skipped until it accepts again, and "
                "the\n"
                "                                summary has a section per URL (docs/metrics.md, Several "
                "URLs);\n"
                "                                over HTTP/1.1 or HTTP/2 (triton too), a multi-turn session's\n"
                "                                turns on one URL, each rank of --world-size over all of them\n"),
    OPT("service-kind", OPT_SERVICE_KIND, ARG, ECHO_WORDS(triton, "openai", "triton"),
        .help = "      --service-kind {openai,triton}\n"
                "                                openai: an OpenAI-compatible HTTP API (default); triton: the\n"
                "                                KServe v2 gRPC API of Triton (ModelInfer, or ModelStreamInfer\n"
                "                                with --streaming) over HTTP/2 (h2c on http://, h2 on https://)\n"),
    OPT("backend", OPT_BACKEND, ARG, ECHO(backend),
        .help = "      --backend {tensorrtllm,vllm}\n"
                "                                triton: the model's input tensors, as GenAI-Perf sends them\n"
                "                                (default: tensorrtllm)\n"),
    OPT("endpoint-type", OPT_ENDPOINT_TYPE, ARG, ECHO(endpoint_type),
        .help = "      --endpoint-type TYPE      API to call (default: chat): chat, completions, embeddings,\n"
                "                                rankings (NIM; nim_rankings), hf_tei_rankings,\n"
                "                                cohere_rankings, responses (OpenAI Responses), messages\n"
                "                                (Anthropic), generate (TGI), image_retrieval (GenAI-Perf's:\n"
                "                                images to v1/infer); kserve is --service-kind triton\n"
                "                                (docs/endpoints.md)\n"),
    OPT("endpoint", OPT_ENDPOINT, ARG, ECHO_AS(SG_OT_STR, endpoint_path, char *),
        .help = "      --endpoint PATH           path after the URL's base path, leading / optional\n"
                "                                (default: the type's, e.g. v1/chat/completions)\n"),
    OPT("streaming", OPT_STREAMING, NOARG, FLAG(streaming),
        .help = "      --streaming               ask for streamed (SSE) responses: needed for time to first\n"
                "                                token and inter-token latency\n"),
    OPT("http2", OPT_HTTP2, NOARG, FLAG(http2),
        .help = "      --http2                   HTTP/2: h2c (prior knowledge) on http://, h2 required through\n"
                "                                ALPN on https:// (without it https:// takes what the server\n"
                "                                selects, h2 preferred); many streams per connection; refused\n"
                "                                streams are re-sent (up to 8 times)\n"),
    OPT("max-connections", OPT_MAX_CONNECTIONS, ARG, .flags = SG_OPT_ECHO_ZERO_NULL, U32(max_connections, 1, 1000000),
        .help = "      --max-connections N       connections to the target over all workers (default: as\n"
                "                                demand needs)\n"),
    OPT("local-address", OPT_LOCAL_ADDRESS, ARG, ECHO_AS(SG_OT_STR, local_address, char *),
        .help = "      --local-address LIST      source addresses of the connections, taken in turn: a comma-\n"
                "                                separated list of addresses, ranges FIRST-LAST and CIDR blocks\n"
                "                                (e.g. 127.0.0.2-127.0.0.9 or 127.0.0.0/29); each gives ~28k\n"
                "                                more connections to one server address:port. Each must be an\n"
                "                                address of this host (default: the kernel's choice)\n"),
    OPT("header", OPT_HEADER, ARG, ECHO(headers), .short_name = 'H', .flags = SG_OPT_REPEATABLE,
        .help = "  -H, --header 'Name: value'    extra HTTP header on every request; repeatable\n"),
    OPT("api-key", OPT_API_KEY, ARG,
        NO_ECHO("a credential: kept out of the files (headers shows Authorization redacted)"),
        .help = "      --api-key KEY             send 'Authorization: Bearer KEY'\n"),
    OPT("extra-inputs", OPT_EXTRA_INPUTS, ARG, ECHO(extra_inputs), .flags = SG_OPT_REPEATABLE,
        .help = "      --extra-inputs NAME:VALUE field added to every request body; repeatable, later wins.\n"
                "                                VALUE is typed: numbers, true/false, null, JSON arrays and\n"
                "                                objects, \"quoted strings\" as JSON; anything else a string.\n"
                "                                Or a whole JSON object: "
                "'{\"temperature\":0,\"ignore_eos\":true}'\n"
                "                                triton: a one-element input tensor each: true/false BOOL,\n"
                "                                integers INT32 (INT64 past its range), numbers FP32, strings\n"
                "                                BYTES\n"),
    OPT("request-rate", OPT_REQUEST_RATE, ARG, ECHO_AS(SG_OT_NUM, request_rate, double), .flags = SG_OPT_ECHO_ZERO_NULL,
        .help = "      --request-rate R          open loop: R requests/s on a schedule fixed in advance,\n"
                "                                whatever the server's speed; not with --concurrency. inf\n"
                "                                (vLLM's): every request due at the start, sent at once\n"),
    OPT("request-distribution", OPT_DISTRIBUTION, ARG, ECHO_IF(rate),
        ENUM(distribution, "poisson, constant or gamma", ALIASES("poisson", "constant", "gamma"), SG_DIST_POISSON,
             SG_DIST_CONSTANT, SG_DIST_GAMMA),
        GIVEN(distribution_given),
        .help = "      --request-distribution {poisson,constant,gamma}\n"
                "                                arrivals with --request-rate (default: poisson)\n"),
    OPT("concurrency", OPT_CONCURRENCY, ARG, ECHO_AS(SG_OT_U32, concurrency, uint32_t), ECHO_IF(closed),
        .help = "      --concurrency N           closed loop: N requests in flight, each slot sends its next\n"
                "                                request when the previous one ends\n"),
    OPT("max-concurrency", OPT_MAX_CONCURRENCY, ARG, .flags = SG_OPT_ECHO_ZERO_NULL, U32(max_concurrency, 1, 10000000),
        GIVEN(max_concurrency_given),
        .help = "      --max-concurrency N       with --request-rate: cap on requests in flight; a request\n"
                "                                that has to wait is late, and that is reported (default: none)\n"),
    OPT("request-count", OPT_REQUEST_COUNT, ARG, .flags = SG_OPT_ECHO_ZERO_NULL, .aliases = ALIASES("num-requests"),
        U64(request_count, 1), GIVEN(count_given),
        .help = "      --request-count N, --num-requests N\n"
                "                                requests to measure (default: 100 when --benchmark-duration\n"
                "                                is not given)\n"), /* AIPerf */
    OPT("benchmark-duration", OPT_DURATION, ARG, .flags = SG_OPT_ECHO_ZERO_NULL,
        NUM(benchmark_duration_s, "a positive number of seconds", 0, true, 1e9), GIVEN(duration_given),
        .help = "      --benchmark-duration S    measure for S seconds; with --request-count, whichever\n"
                "                                comes first ends the run\n"),
    OPT("benchmark-grace-period", OPT_GRACE, ARG, ECHO_AS(SG_OT_NUM, benchmark_grace_s, double), ECHO_IF(grace),
        .help = "      --benchmark-grace-period S\n"
                "                                after --benchmark-duration's sending, wait at most S seconds\n"
                "                                for the requests outstanding, then cancel them: counted as\n"
                "                                cancelled (not failed), their waits reported (default: inf,\n"
                "                                each bounded by --request-timeout)\n"),
    OPT("warmup-request-count", OPT_WARMUP, ARG, U64(warmup_request_count, 0), GIVEN(warmup_given),
        .help = "      --warmup-request-count N  requests sent first and left out of every metric (default: 0)\n"),
    OPT("request-timeout", OPT_TIMEOUT, ARG, NUM(request_timeout_s, "a positive number of seconds", 0, true, 1e9),
        .help = "      --request-timeout S       seconds a request may take from its send (default: 600)\n"),
    OPT("random-seed", OPT_SEED, ARG, .aliases = ALIASES("seed"), U64(random_seed, 0),
        .help = "      --random-seed N           seed for prompts, lengths, model choice and arrival times\n"
                "                                (default: 0)\n"), /* vLLM: seed */
    OPT("workers", OPT_WORKERS, ARG, ECHO_AS(SG_OT_U32, workers, unsigned),
        .help = "      --workers N               worker threads, one per core (default: the CPUs this process\n"
                "                                may run on)\n"),
    OPT("synthetic-input-tokens-mean", OPT_ISL_MEAN, ARG,
        .aliases = ALIASES("isl", "prompt-input-tokens-mean", "random-input-len"), U32(isl_mean, 1, MAX_ISL),
        GIVEN(isl_given),
        .help = "      --synthetic-input-tokens-mean N, --isl N\n"
                "                                mean prompt length in tokens (default: 550); exact with\n"
                "                                --tokenizer (see Input sequence length below)\n"), /* vLLM:
                                                                                                       random-input-len
                                                                                                     */
    OPT("synthetic-input-tokens-stddev", OPT_ISL_STDDEV, ARG,
        .aliases = ALIASES("isl-stddev", "prompt-input-tokens-stddev"), U32(isl_stddev, 0, MAX_ISL), GIVEN(isl_given),
        .help = "      --synthetic-input-tokens-stddev N, --isl-stddev N\n"
                "                                its standard deviation (default: 0)\n"),
    OPT("num-prompts", OPT_NUM_PROMPTS, ARG, U32(num_prompts, 1, MAX_PROMPTS), GIVEN(num_prompts_given),
        SET(num_prompts_given),
        .help = "      --num-prompts N           distinct prompts, reused in turn (default: 100); GenAI-Perf's\n"
                "                                meaning: vLLM's --num-prompts is --request-count here.\n"
                "                                Given, prompts repeat: each is sent requests/N times\n"),
    OPT("cache-bust", OPT_CACHE_BUST, ARG, ECHO_WORDS(cache_bust, "none", "first_turn_prefix"),
        .help = "      --cache-bust TARGET       first_turn_prefix: each request's prompt starts with words\n"
                "                                of its own (inside its ISL), so no request repeats an\n"
                "                                earlier prompt and a prefix cache serves none of it; none:\n"
                "                                the --num-prompts prompts repeat in turn. Default:\n"
                "                                first_turn_prefix for synthetic prompts, none when the run\n"
                "                                asks for reuse (--num-prompts, --num-prefix-prompts,\n"
                "                                --input-file, sessions, embeddings, rankings)\n"),
    OPT("output-tokens-mean", OPT_OSL_MEAN, ARG, ECHO_AS(SG_OT_INT, osl_mean, int32_t),
        .aliases = ALIASES("osl", "prompt-output-tokens-mean", "random-output-len"),
        .help = "      --output-tokens-mean N, --osl N\n"
                "                                ask for N output tokens (max_tokens) per request; -1 leaves\n"
                "                                max_tokens out (default: -1)\n"), /* vLLM: random-output-len */
    OPT("output-tokens-stddev", OPT_OSL_STDDEV, ARG, .aliases = ALIASES("osl-stddev", "prompt-output-tokens-stddev"),
        U32(osl_stddev, 0, INT32_MAX),
        .help = "      --output-tokens-stddev N, --osl-stddev N\n"
                "                                standard deviation of the tokens asked for (default: 0)\n"),
    OPT("ignore-eos", OPT_IGNORE_EOS, NOARG, NO_ECHO("in extra_inputs (\"ignore_eos\": true)"),
        .help = "      --ignore-eos              \"ignore_eos\": true in every body (vLLM's flag), so the\n"
                "                                server generates exactly max_tokens\n"), /* vLLM */
    OPT("output-tokens-mean-deterministic", OPT_OSL_DETERMINISTIC, NOARG, FLAG(osl_deterministic),
        .help = "      --output-tokens-mean-deterministic\n"
                "                                triton: also ask for at least that many (min_length for\n"
                "                                tensorrtllm, min_tokens for vllm); openai: no effect\n"),
    OPT("tokenizer", OPT_TOKENIZER, ARG,
        STR(tokenizer, "expected a tokenizer.json file, a directory holding one, a *.tiktoken file or a "
                       "Hugging Face model id"),
        .help = "      --tokenizer T             count tokens with T: a tokenizer.json, a directory holding one, "
                "a\n"
                "                                *.tiktoken file, or a Hugging Face model id in the local cache\n"),
    OPT("input-file", OPT_INPUT_FILE, ARG, .aliases = ALIASES("dataset-path"), STR(input_file, "expected a file"),
        .help = "      --input-file PATH         prompts, request bodies or a trace from a file instead of\n"
                "                                synthetic prompts; requests go through its entries in file\n"
                "                                order, round robin (formats: docs/workloads.md)\n"), /* vLLM:
                                                                                                         dataset-path
                                                                                                       */
    OPT("input-format", OPT_INPUT_FORMAT, ARG, ECHO(input_format), .aliases = ALIASES("custom-dataset-type"),
        .help =
            "      --input-format F          genai_perf ({\"text_input\": ...} lines), llm_perf\n"
            "                                ({\"input\": ...} lines), sharegpt (JSON array of\n"
            "                                conversations), perf_analyzer ({\"data\": [{\"payload\": "
            "[...]}]}),\n"
            "                                raw_payload (lines of request bodies, sent as written),\n"
            "                                mooncake_trace (timestamp, input_length, output_length,\n"
            "                                hash_ids lines), multi_turn (AIPerf's sessions) (default:\n"
            "                                detected from the file); AIPerf's --custom-dataset-type\n"), /* AIPerf's
                                                                                                           */
    OPT("rankings-passages-mean", OPT_RANK_PASSAGES_MEAN, ARG, ECHO_IF(rankings),
        U32(rankings.passages_mean, 1, MAX_BATCH), FIRST(rankings_flag),
        .help = "      --rankings-passages-mean N, --rankings-passages-stddev N\n"
                "                                synthetic rankings: passages per query (AIPerf's; default\n"
                "                                --batch-size, stddev 0)\n"),
    OPT("rankings-passages-stddev", OPT_RANK_PASSAGES_STDDEV, ARG, ECHO_IF(rankings),
        U32(rankings.passages_stddev, 0, MAX_BATCH), SET(rankings.passages_stddev_given), FIRST(rankings_flag),
        .help_in = "rankings-passages-mean"),
    OPT("rankings-passages-prompt-token-mean", OPT_RANK_PASSAGE_TOKENS_MEAN, ARG, ECHO_IF(rankings),
        U32(rankings.passage_mean, 1, MAX_ISL), FIRST(rankings_flag), .help_in = "rankings-query-prompt-token-mean"),
    OPT("rankings-passages-prompt-token-stddev", OPT_RANK_PASSAGE_TOKENS_STDDEV, ARG, ECHO_IF(rankings),
        U32(rankings.passage_stddev, 0, MAX_ISL), SET(rankings.passage_stddev_given), FIRST(rankings_flag),
        .help_in = "rankings-query-prompt-token-mean"),
    OPT("rankings-query-prompt-token-mean", OPT_RANK_QUERY_TOKENS_MEAN, ARG, ECHO_IF(rankings),
        U32(rankings.query_mean, 1, MAX_ISL), FIRST(rankings_flag),
        .help = "      --rankings-query-prompt-token-mean N, --rankings-query-prompt-token-stddev N,\n"
                "      --rankings-passages-prompt-token-mean N, --rankings-passages-prompt-token-stddev N\n"
                "                                tokens of the query and of each passage (default: the\n"
                "                                synthetic input tokens mean and stddev)\n"),
    OPT("rankings-query-prompt-token-stddev", OPT_RANK_QUERY_TOKENS_STDDEV, ARG, ECHO_IF(rankings),
        U32(rankings.query_stddev, 0, MAX_ISL), SET(rankings.query_stddev_given), FIRST(rankings_flag),
        .help_in = "rankings-query-prompt-token-mean"),
    OPT("image-width-mean", OPT_MEDIA, ARG, ECHO(media),
        .help = "      --image-width-mean W, --image-height-mean H (AIPerf's)\n"
                "                                synthetic images in chat requests (both above 0): random noise\n"
                "                                of W x H pixels (normal around each mean), encoded before the\n"
                "                                run and sent as data URLs in image_url parts; each request\n"
                "                                its own images, repeated only past the pool "
                "(docs/workloads.md)\n"),
    OPT("image-width-stddev", OPT_MEDIA, ARG, NO_ECHO("in media"),
        .help = "      --image-width-stddev S, --image-height-stddev S\n"
                "                                their standard deviations in pixels (default: 0)\n"),
    OPT("image-height-mean", OPT_MEDIA, ARG, NO_ECHO("in media"), .help_in = "image-width-mean"),
    OPT("image-height-stddev", OPT_MEDIA, ARG, NO_ECHO("in media"), .help_in = "image-width-stddev"),
    OPT("image-format", OPT_MEDIA, ARG, NO_ECHO("in media"),
        .help = "      --image-format FMT        png, jpeg or random (per image) (default: png)\n"),
    OPT("image-batch-size", OPT_MEDIA, ARG, NO_ECHO("in media"), .aliases = ALIASES("batch-size-image"),
        .help = "      --image-batch-size N      images per request, 0 for none (default: 1)\n"
                "                                (AIPerf's alias: --batch-size-image)\n"),
    OPT("audio-length-mean", OPT_MEDIA, ARG, NO_ECHO("in media"),
        .help = "      --audio-length-mean S, --audio-length-stddev S\n"
                "                                synthetic audio (mean above 0): WAV clips of noise S seconds\n"
                "                                long (normal), sent as input_audio parts (default: 0, none)\n"),
    OPT("audio-length-stddev", OPT_MEDIA, ARG, NO_ECHO("in media"), .help_in = "audio-length-mean"),
    OPT("audio-format", OPT_MEDIA, ARG, NO_ECHO("in media"),
        .help = "      --audio-format wav        the only format surge writes (AIPerf's mp3 is refused)\n"),
    OPT("audio-batch-size", OPT_MEDIA, ARG, NO_ECHO("in media"), .aliases = ALIASES("batch-size-audio"),
        .help = "      --audio-batch-size N      clips per request, 0 for none (default: 1)\n"
                "                                (AIPerf's alias: --batch-size-audio)\n"),
    OPT("audio-sample-rates", OPT_MEDIA, ARG, NO_ECHO("in media"),
        .help = "      --audio-sample-rates LIST kHz, one drawn per clip, e.g. 16,44.1 (default: 16)\n"),
    OPT("audio-depths", OPT_MEDIA, ARG, NO_ECHO("in media"),
        .help = "      --audio-depths LIST       bits per sample, one drawn per clip: 8,16,24,32 (default: 16)\n"),
    OPT("audio-num-channels", OPT_MEDIA, ARG, NO_ECHO("in media"),
        .help = "      --audio-num-channels N    1 or 2 (default: 1)\n"),
    OPT("conversation-num", OPT_CONV_NUM, ARG, .aliases = ALIASES("num-conversations", "num-sessions"),
        U32(conversation_num, 1, MAX_PROMPTS), GIVEN(conv_given),
        .help = "  --conversation-num N          distinct conversations (default: 100); --num-sessions\n"),
    OPT("conversation-turn-mean", OPT_TURN_MEAN, ARG, .aliases = ALIASES("session-turns-mean"),
        NUM(turn_mean, "a number of turns, at least 1", 1, false, 10000), GIVEN(conv_given),
        .help = "  --conversation-turn-mean N    turns per session (default: 1); --session-turns-mean\n"),
    OPT("conversation-turn-stddev", OPT_TURN_STDDEV, ARG, .aliases = ALIASES("session-turns-stddev"),
        NUM(turn_stddev, "a number of turns, at least 0", 0, false, 10000), GIVEN(conv_given),
        .help = "  --conversation-turn-stddev N  (default: 0); --session-turns-stddev\n"),
    OPT("conversation-turn-delay-mean", OPT_TURN_DELAY_MEAN, ARG, .aliases = ALIASES("session-turn-delay-mean"),
        NUM(turn_delay_mean_ms, "milliseconds, at least 0", 0, false, 1e9), GIVEN(conv_given),
        .help = "  --conversation-turn-delay-mean MS\n"
                "                                delay after a turn ends (default: 0); "
                "--session-turn-delay-mean\n"),
    OPT("conversation-turn-delay-stddev", OPT_TURN_DELAY_STDDEV, ARG, .aliases = ALIASES("session-turn-delay-stddev"),
        NUM(turn_delay_stddev_ms, "milliseconds, at least 0", 0, false, 1e9), GIVEN(conv_given),
        .help = "  --conversation-turn-delay-stddev MS\n"
                "                                (default: 0); --session-turn-delay-stddev\n"),
    OPT("conversation-turn-delay-ratio", OPT_TURN_DELAY_RATIO, ARG, .aliases = ALIASES("session-delay-ratio"),
        NUM(turn_delay_ratio, "a factor, at least 0 (0.5 halves every delay)", 0, false, 1e6), GIVEN(conv_given),
        .help = "  --conversation-turn-delay-ratio X\n"
                "                                scale every delay (default: 1); --session-delay-ratio\n"),
    OPT("prefix-prompt-length", OPT_PREFIX_LEN, ARG, ECHO_IF(prefix), .flags = SG_OPT_ECHO_OFF_ZERO,
        U32(prefix_len, 1, MAX_ISL), GIVEN(prefix_len_given),
        .help = "      --prefix-prompt-length N  tokens in each prefix, counted in the prompt's ISL\n"
                "                                (default: 100)\n"),
    OPT("num-prefix-prompts", OPT_NUM_PREFIX, ARG, .aliases = ALIASES("prefix-prompt-pool-size"),
        U32(num_prefix, 0, MAX_PROMPTS),
        .help = "      --num-prefix-prompts K    K distinct shared prefixes; each prompt starts with one of\n"
                "                                them, drawn at random (seeded) (default: 0, none)\n"),
    OPT("isl-block-size", OPT_BLOCK_SIZE, ARG, U32(block_size, 1, MAX_ISL), GIVEN(block_given),
        .help = "      --isl-block-size N        tokens per hash_ids block of a trace (default: 512, as AIPerf)\n"),
    OPT("fixed-schedule", OPT_FIXED_SCHEDULE, NOARG, FLAG(fixed_schedule),
        .help = "      --fixed-schedule          replay a mooncake_trace: each entry is sent at its timestamp\n"
                "                                (ms, relative to the first), once; or a multi_turn file: each\n"
                "                                session starts at its first turn's timestamp, a later turn at\n"
                "                                its own (or its delay after the turn before); not with\n"
                "                                --request-rate, --concurrency, --request-count or\n"
                "                                --benchmark-duration\n"),
    OPT("fixed-schedule-speedup", OPT_FIXED_SPEEDUP, ARG, ECHO_IF(fixed),
        NUM(fixed_schedule_speedup, "a positive number (2 replays twice as fast)", 0, true, 1e9), GIVEN(speedup_given),
        .help = "      --fixed-schedule-speedup X\n"
                "                                divide the trace's timestamps by X (default: 1)\n"),
    OPT("artifact-dir", OPT_ARTIFACT_DIR, ARG, .aliases = ALIASES("result-dir"),
        STR(artifact_dir, "expected a directory"), GIVEN(artifact_dir_given),
        .help = "      --artifact-dir DIR        where the files go (default: artifacts/<run name>, e.g.\n"
                "                                artifacts/org_model-openai-chat-concurrency1). A DIR that\n"
                "                                holds an earlier run (a run's, sweep's or search's files) is\n"
                "                                left as it is: the run writes to DIR-2 (DIR-3, ...) and says "
                "so\n"), /* vLLM: result-dir */
    OPT("overwrite", OPT_OVERWRITE, NOARG, FLAG(overwrite),
        .help = "      --overwrite               replace the earlier run in DIR instead: its files of surge's\n"
                "                                are removed first (other files stay), so no two runs mix\n"),
    OPT("profile-export-file", OPT_EXPORT_FILE, ARG, ECHO_AS(SG_OT_STR, profile_export_file, char *),
        .aliases = ALIASES("result-filename"),
        .help =
            "      --profile-export-file NAME\n"
            "                                names the exports (default: profile_export.json): surge\n"
            "                                writes <stem>_surge.json, <stem>_surge.csv and, one line per\n"
            "                                request, <stem>_surge.jsonl; AIPerf's files beside them:\n"
            "                                <stem>_aiperf.json, <stem>_aiperf.csv and <stem>.jsonl\n"
            "                                (AIPerf's schema, for aiperf plot and its importers)\n"), /* vLLM:
                                                                                                          result-filename
                                                                                                        */
    OPT("export-level", OPT_EXPORT_LEVEL, ARG, ECHO_WORDS(export_summary, "records", "summary"),
        .help = "      --export-level summary|records\n"
                "                                records (default): all of the above; summary: the summary\n"
                "                                files only, no per-request .jsonl files (for huge runs; not\n"
                "                                with --generate-plots or several ranks). AIPerf's raw level\n"
                "                                (request and response bodies) is refused\n"),
    OPT("verbose", OPT_VERBOSE, NOARG, .short_name = 'v', FLAG(verbose),
        .help = "  -v, --verbose                 more detail on stderr\n"),
    OPT("max-error-rate", OPT_MAX_ERROR_RATE, ARG, NUM(max_error_rate, "a number from 0 to 1", 0, false, 1),
        .help = "      --max-error-rate F        share of failed requests (0 to 1) tolerated before surge\n"
                "                                exits non-zero (default: 0)\n"),
    OPT("goodput", OPT_GOODPUT, ARG, ECHO(goodput), .flags = SG_OPT_REPEATABLE,
        .help = "      --goodput 'METRIC:VALUE ...'\n"
                "                                SLOs a request must all meet to count as good, separated by\n"
                "                                spaces or commas: time_to_first_token:200\n"
                "                                inter_token_latency:20 request_latency:1000 (ms, at most),\n"
                "                                output_token_throughput_per_user:30 (tokens/s, at least);\n"
                "                                vLLM's ttft, tpot and e2el are accepted too\n"),
    OPT("progress", OPT_PROGRESS, NOARG,
        NO_ECHO("the console's display only: nothing measured or written depends on it"),
        .help = "      --progress, --no-progress live progress line on stderr (default: when stderr is a\n"
                "                                terminal)\n"),
    OPT("no-progress", OPT_NO_PROGRESS, NOARG, NO_ECHO("progress's negative"), .aliases = ALIASES("disable-tqdm"),
        .help_in = "progress"), /* vLLM: disable-tqdm */
    OPT("version", OPT_VERSION, NOARG, NO_ECHO("an action, not a setting"), .flags = SG_OPT_NOT_A_KEY,
        .help = "      --version                 print the version and exit\n"),
    OPT("help", OPT_HELP, NOARG, NO_ECHO("an action, not a setting"), .short_name = 'h', .flags = SG_OPT_NOT_A_KEY,
        .help = "  -h, --help                    print this help and exit\n"),
    OPT("measurement-interval", OPT_MEASUREMENT_INTERVAL, ARG, ECHO(stability), .short_name = 'p',
        NUM(measurement_interval_ms, "milliseconds, 10 or more", 10, false, 86400e3),
        .help = "  -p, --measurement-interval MS\n"
                "                                stability windows (perf_analyzer's): measure in windows of MS\n"
                "                                milliseconds (a request in the window of its intended start)\n"
                "                                until the last 3 agree, then stop; the figures are those 3\n"
                "                                windows' requests pooled, and the summary's \"stability\" lists\n"
                "                                every window. Instead of --request-count/--benchmark-duration;\n"
                "                                each point of a sweep runs until stable\n"), /* perf_analyzer,
                                                                                                 GenAI-Perf: ms */
    OPT("stability-percentage", OPT_STABILITY, ARG, NO_ECHO("in stability"),
        NUM(stability_pct, "a percentage above 0", 0, true, 1000), FIRST(stability_flag), .short_name = 's',
        .help = "  -s, --stability-percentage P  the last 3 windows agree when max/min of their throughput "
                "and\n"
                "                                of their mean request latency are each within P% (default "
                "10)\n"), /* perf_analyzer, GenAI-Perf */
    OPT("max-trials", OPT_MAX_TRIALS, ARG, NO_ECHO("in stability"), U32(max_trials, 3, SG_STABLE_MAX_TRIALS),
        FIRST(stability_flag),
        .help = "      --max-trials N            at most N windows (3 or more; default 10); not stable by then:\n"
                "                                the last 3 reported, NOT STABLE, exit status 6\n"), /* perf_analyzer
                                                                                                      */
    OPT("gpu-telemetry", OPT_GPU_TELEMETRY, OPTARG, ECHO_AS(SG_OT_FLAG, gpu_telemetry, bool),
        .flags = SG_OPT_REPEATABLE,
        .help = "      --gpu-telemetry [URL ...] scrape NVIDIA DCGM exporters too (AIPerf's; URLs up to the next\n"
                "                                flag, localhost:9400 meaning http://localhost:9400/metrics;\n"
                "                                default that one): per GPU utilisation, memory, power, SM\n"
                "                                clock and energy in the console, summary and report, and output\n"
                "                                tokens per joule; AIPerf's telemetry_data layout in its\n"
                "                                files\n"), /* AIPerf: DCGM exporter URLs */
    OPT("batch-size", OPT_BATCH_SIZE, ARG, .short_name = 'b',
        .aliases = ALIASES("batch-size-text", "prompt-batch-size"), U32(batch_size, 1, MAX_BATCH), GIVEN(batch_given),
        .help = "  -b, --batch-size N            inputs per embeddings request, passages per rankings query "
                "(1)\n"), /* GenAI-Perf's newer name; AIPerf's */
    OPT("concurrency-range", OPT_CONCURRENCY_RANGE, ARG, ECHO(sweep),
        .help = "      --concurrency-range START:END[:STEP], --request-rate-range START:END[:STEP]\n"
                "                                perf_analyzer's ranges: START, START+STEP, ... up to END\n"
                "                                (STEP defaults to 1)\n"), /* perf_analyzer */
    OPT("request-rate-range", OPT_RATE_RANGE, ARG, NO_ECHO("in sweep"),
        .help_in = "concurrency-range"), /* perf_analyzer */
    OPT("parameter-sweep-cooldown-seconds", OPT_COOLDOWN, ARG, NO_ECHO("in sweep and search (cooldown_seconds)"),
        NUM(cooldown_s, "seconds, 0 or more", 0, false, 86400), GIVEN(cooldown_given),
        .help = "      --parameter-sweep-cooldown-seconds S\n"
                "                                pause between points (AIPerf's flag; default here: 1)\n"), /* AIPerf
                                                                                                             */
    OPT("slo", OPT_SLO, ARG, ECHO(slo), .flags = SG_OPT_REPEATABLE,
        .help = "      --slo 'METRIC:STAT<VALUE' a verdict on the whole run, repeatable: STAT is avg, min, max,\n"
                "                                std or pNN (p50, p99, p99.9); <, <=, > or >=; METRIC takes\n"
                "                                --goodput's names (time_to_first_token, ttft, tpot, e2el,\n"
                "                                ...), in ms or tokens/s. Or a run-level QUANTITY<VALUE:\n"
                "                                error_rate (failed / (ok + failed); requests surge cancels\n"
                "                                are neither), request_throughput (ok requests/s),\n"
                "                                output_token_throughput (tokens/s). Verdicts follow the table\n"
                "                                and go to the summary (\"slo\"); each states n and an exact\n"
                "                                interval: pass when all of it meets the target, fail when\n"
                "                                none does, else inconclusive. Exit status 4 when one fails,\n"
                "                                5 when one is inconclusive\n"),
    OPT("slice-duration", OPT_SLICE_DURATION, ARG, .flags = SG_OPT_ECHO_ZERO_NULL,
        NUM(slice_duration_s, "seconds, above 0", 0, true, 86400 * 365),
        .help = "      --slice-duration S        also measure each S-second window of the run (AIPerf's time\n"
                "                                slices), a request in the window of its intended start:\n"
                "                                <stem>_surge_timeslices.json and .csv\n"), /* AIPerf */
    OPT("stall-threshold-ms", OPT_STALL_THRESHOLD, ARG, ECHO_AS(SG_OT_NUM, stall_threshold_ms, double),
        .help = "      --stall-threshold-ms MS   a worker whose loop runs this late (descheduled, blocked, CPU\n"
                "                                starved) is a client stall: said on stderr at once, listed in\n"
                "                                the summary's client_stalls and marked in the report\n"
                "                                (default: 100; 0: not watched)\n"),
    OPT("server-metrics-url", OPT_SERVER_METRICS_URL, ARG, ECHO(server_metrics_urls), .flags = SG_OPT_REPEATABLE,
        .help = "      --server-metrics-url URL  scrape the server's Prometheus metrics (http://HOST[:PORT]/PATH,\n"
                "                                e.g. http://127.0.0.1:8000/metrics) during each load point, on a\n"
                "                                thread of its own; repeatable (up to 8): "
                "server_metrics.json/.csv\n"), /* GenAI-Perf, AIPerf */
    OPT("server-metrics-interval", OPT_SERVER_METRICS_INTERVAL, ARG,
        NUM(server_metrics_interval_s, "seconds, 0.1 or more", 0.1, false, 3600), GIVEN(scrape_interval_given),
        .help = "      --server-metrics-interval S\n"
                "                                seconds between scrapes (default 1, at least 0.1)\n"), /* seconds
                                                                                                         */
    OPT("burstiness", OPT_BURSTINESS, ARG, ECHO_AS(SG_OT_NUM, burstiness, double), ECHO_IF(gamma),
        .aliases = ALIASES("arrival-smoothness"),
        .help = "      --burstiness K, --arrival-smoothness K\n"
                "                                gamma arrivals of shape K (vLLM's and AIPerf's names; implies\n"
                "                                --request-distribution gamma): gaps with the same mean and a\n"
                "                                coefficient of variation of 1/sqrt(K): 1 is Poisson, below 1\n"
                "                                burstier, above 1 smoother (default: 1)\n"), /* vLLM; AIPerf */
    OPT("search", OPT_SEARCH, ARG, ECHO(search),
        ENUM(search, "max-request-rate (open loop) or max-concurrency (closed loop)",
             ALIASES("max-request-rate", "max-concurrency"), SG_SEARCH_MAX_RATE, SG_SEARCH_MAX_CONCURRENCY),
        .help = "      --search max-request-rate|max-concurrency\n"
                "                                find the highest request rate (open loop) or concurrency\n"
                "                                (closed loop) at which every --slo passes: double from LO\n"
                "                                until a probe fails, then bisect; probes stop early once an\n"
                "                                --slo fails significantly, and an open-loop probe whose\n"
                "                                outstanding requests keep growing fails (the server fell\n"
                "                                behind). Each\n"
                "                                probe is one load point (default per probe: 10 s,\n"
                "                                --benchmark-duration or --request-count change it); every\n"
                "                                probe in search.json and .csv\n"),
    OPT("search-range", OPT_SEARCH_RANGE, ARG, NO_ECHO("in search"),
        .help = "      --search-range LO:HI      where to search (default 1, no upper bound; LO: alone too)\n"),
    OPT("search-precision", OPT_SEARCH_PRECISION, ARG, NO_ECHO("in search"),
        NUM(search_precision, "a fraction above 0 and at most 1 (0.05 = 5%)", 0, true, 1),
        GIVEN(search_precision_given),
        .help = "      --search-precision F      stop when lowest failing - highest passing <= F x passing\n"
                "                                (default 0.05)\n"),
    OPT("search-trials", OPT_SEARCH_TRIALS, ARG, NO_ECHO("in search"), U32(search_trials, 1, 100),
        GIVEN(search_trials_given),
        .help = "      --search-trials N         probes pooled at each value before its verdict (default 1)\n"),
    OPT("search-max-trials", OPT_SEARCH_MAX_TRIALS, ARG, NO_ECHO("in search"), U32(search_max_trials, 1, 100),
        GIVEN(search_max_trials_given),
        .help = "      --search-max-trials M     more probes, pooled, while a value is inconclusive, up to M\n"
                "                                (default 4); the answer is an interval at\n"
                "                                --confidence-level, each end shown to pass or to fail,\n"
                "                                with a point estimate beside it (an isotonic fit over\n"
                "                                every probe; not a confidence statement)\n"),
    OPT("num-profile-runs", OPT_NUM_PROFILE_RUNS, ARG, ECHO(multi_run), U32(num_profile_runs, 1, MAX_PROFILE_RUNS),
        .help = "      --num-profile-runs N      run the load point N times (default 1): each run's files in\n"
                "                                profile_runs/run_NNNN/, every metric's mean, std, CV and\n"
                "                                Student's t confidence interval across the runs in\n"
                "                                aggregate/profile_export_aiperf_aggregate.json and .csv and\n"
                "                                on the console. With a sweep: each value N times, in\n"
                "                                <kind>_<value>/profile_runs/ and .../aggregate/. Not with "
                "--search\n"), /* AIPerf */
    OPT("confidence-level", OPT_CONFIDENCE_LEVEL, ARG, ECHO_AS(SG_OT_NUM, confidence_level, double),
        .help = "      --confidence-level C      of every verdict's interval (default 0.95)\n"), /* AIPerf */
    OPT("profile-run-cooldown-seconds", OPT_PROFILE_RUN_COOLDOWN, ARG, NO_ECHO("in multi_run"),
        NUM(profile_run_cooldown_s, "seconds, 0 or more", 0, false, 86400), FIRST(multirun_flag),
        .help = "      --profile-run-cooldown-seconds S\n"
                "                                pause between runs (default 0)\n"), /* AIPerf */
    OPT("profile-run-disable-warmup-after-first", OPT_WARMUP_FIRST_ONLY, OPTARG, NO_ECHO("in multi_run"),
        .help = "      --profile-run-disable-warmup-after-first [true|false]\n"
                "                                --warmup-request-count before the first run only (default);\n"
                "                                false (or --no-profile-run-disable-warmup-after-first): before\n"
                "                                every run\n"), /* AIPerf */
    OPT("no-profile-run-disable-warmup-after-first", OPT_NO_WARMUP_FIRST_ONLY, NOARG, NO_ECHO("in multi_run"),
        .help_in = "profile-run-disable-warmup-after-first"),
    OPT("set-consistent-seed", OPT_CONSISTENT_SEED, OPTARG, NO_ECHO("always so: every run is seeded (random_seed)"),
        .help =
            "      --set-consistent-seed     accepted: every run always sends the same seeded workload\n"), /* AIPerf
                                                                                                             */
    OPT("no-set-consistent-seed", OPT_NO_CONSISTENT_SEED, NOARG, NO_ECHO("refused: every run is seeded")),
    OPT("input-dataset", OPT_INPUT_DATASET, OPTARG, NO_ECHO("refused: not supported")),
    OPT("generate-plots", OPT_GENERATE_PLOTS, OPTARG, ECHO_AS(SG_OT_FLAG, generate_plots, bool),
        .help = "      --generate-plots          also write report.html, the run's HTML report (as `surge report\n"
                "                                DIR` does), into the artifact directory\n"),
    OPT("show-trace-timing", OPT_SHOW_TRACE_TIMING, NOARG, FLAG(show_trace_timing),
        .help = "      --show-trace-timing       also show the HTTP trace (http_req_connecting, _tls_handshaking,\n"
                "                                _sending, _waiting, _receiving, _duration) in the console table;\n"
                "                                the files always have them (docs/metrics.md, HTTP trace)\n"), /* AIPerf
                                                                                                                */
    OPT("url-strategy", OPT_URL_STRATEGY, ARG, ECHO_IF(urls),
        ENUM(url_strategy, "round_robin or least_in_flight",
             ALIASES("round_robin", "least_in_flight", "round-robin", "least-in-flight"), SG_URL_ROUND_ROBIN,
             SG_URL_LEAST_IN_FLIGHT, SG_URL_ROUND_ROBIN, SG_URL_LEAST_IN_FLIGHT),
        .help = "      --url-strategy {round_robin,least_in_flight}\n"
                "                                several URLs: in turn (AIPerf's default), or to the URL with the\n"
                "                                fewest of this worker's requests in flight or waiting\n"), /* AIPerf
                                                                                                             */
    OPT("io-backend", OPT_IO_BACKEND, ARG, ECHO(io_backend),
        .help = "      --io-backend auto|io_uring|epoll\n"
                "                                the workers' I/O (default: $SURGE_IO_BACKEND, else auto:\n"
                "                                io_uring where the kernel and any seccomp profile allow it,\n"
                "                                else epoll, with a line saying why)\n"),
    OPT("timestamps", OPT_TIMESTAMPS, ARG, ECHO_WORDS(user_timestamps, "kernel", "user"),
        .help = "      --timestamps kernel|user  where receive times come from (default kernel): the kernel's\n"
                "                                software receive stamp of each read, so TTFT, ITL and the rest\n"
                "                                do not depend on when the client got the CPU; user: the clock\n"
                "                                read when the worker handles the read (the summary's\n"
                "                                timestamp_source says which ran)\n"),
    OPT("coalesce-us", OPT_COALESCE_US, ARG, ECHO(coalesce_us),
        .help = "      --coalesce-us N|auto      let a worker hold received data up to N microseconds so it\n"
                "                                wakes once per batch rather than per segment (0 = off;\n"
                "                                default auto: 1000 where receive times are the kernel's\n"
                "                                stamps, 0 where they are taken in user space, which the\n"
                "                                window would delay). Never past a due send; shrunk to 1/100\n"
                "                                of the requests' mean latency, so fast exchanges and closed\n"
                "                                loops do not wait on it (docs/architecture.md, event loop)\n"),
    OPT("world-size", OPT_WORLD_SIZE, ARG, ECHO_AS(SG_OT_U32, world_size, uint32_t), .flags = SG_OPT_ECHO_ZERO_NULL,
        .help = "      --world-size N            one run over N processes (ranks), on one host or many; each\n"
                "                                sends its share of the one global schedule, rank 0 merges the\n"
                "                                results (docs/distributed.md). Also taken from Slurm, Open MPI,\n"
                "                                MPICH, and a Kubernetes Indexed Job (with SURGE_WORLD_SIZE)\n"),
    OPT("rank", OPT_RANK, ARG, ECHO_AS(SG_OT_INT, rank, int32_t), ECHO_IF(rank),
        .help = "      --rank R                  this process's rank, 0 to N-1\n"),
    OPT("coordinator", OPT_COORDINATOR, ARG, ECHO_AS(SG_OT_STR, coordinator, char *),
        .help = "      --coordinator HOST[:PORT] where rank 0 listens for the others (default port 29517)\n"),
    OPT("coordinator-timeout", OPT_COORD_TIMEOUT, ARG,
        NUM(coordinator_timeout_s, "seconds, 1 or more", 1, false, 86400),
        .help = "      --coordinator-timeout S   how long ranks wait for each other (default 120)\n"),
    OPT("cacert", OPT_CACERT, ARG, ECHO_AS(SG_OT_STR, cacert, char *),
        .help = "      --cacert FILE             https://: trust the CA certificates in FILE (PEM) instead of\n"
                "                                the system store\n"),
    OPT("insecure", OPT_INSECURE, NOARG, .short_name = 'k', FLAG(insecure),
        .help = "  -k, --insecure                https://: skip certificate and host-name verification\n"),
    OPT("cert", OPT_CERT, ARG, ECHO_AS(SG_OT_STR, client_cert, char *),
        .help = "      --cert FILE --key FILE    https://: present this client certificate (PEM) and its key\n"),
    OPT("key", OPT_KEY, ARG, ECHO_AS(SG_OT_STR, client_key, char *), .help_in = "cert"),
    OPT("config", OPT_CONFIG, ARG, ECHO(config_file), .short_name = 'f', .flags = SG_OPT_NOT_A_KEY,
        .help = "  -f, --config FILE             read flags from a YAML file whose keys are the long flags of\n"
                "                                this list, dashes or underscores (isl: 128, streaming: true,\n"
                "                                concurrency: [1, 2, 4], header: [\"A: b\"]); flags on the\n"
                "                                command line win, and a repeatable one's values replace the\n"
                "                                file's list. surge config validate FILE checks a file without\n"
                "                                sending anything (surge config --help)\n"),
    OPT("random-range-ratio", OPT_VLLM_RANGE_RATIO, ARG,
        NO_ECHO("vLLM's: only 0 is taken (fixed lengths: the stddevs are 0)")),                              /* vLLM */
    OPT("dataset-name", OPT_VLLM_DATASET_NAME, ARG, NO_ECHO("vLLM's: said by input_file and input_format")), /* vLLM */
    OPT("save-result", OPT_VLLM_SAVE_RESULT, NOARG, NO_ECHO("vLLM's: surge always writes its files"),
        .aliases = ALIASES("save-detailed")), /* vLLM: save-detailed; vLLM */
    OPT("percentile-metrics", OPT_VLLM_PERCENTILE_METRICS, ARG,
        NO_ECHO("vLLM's: checked only (every summary has them)")), /* vLLM */
    OPT("metric-percentiles", OPT_VLLM_METRIC_PERCENTILES, ARG,
        NO_ECHO("vLLM's: checked only (every summary has them)")), /* vLLM */
    OPT("ramp-up-strategy", OPT_RAMP_STRATEGY, ARG, ECHO_IF(rate),
        ENUM(ramp_strategy, "linear or exponential", ALIASES("linear", "exponential"), SG_RAMP_LINEAR,
             SG_RAMP_EXPONENTIAL),
        .help = "      --ramp-up-strategy {linear,exponential}, --ramp-up-start-rps A, --ramp-up-end-rps B\n"
                "                                vLLM's ramp: the open loop's rate goes from A to B (B is the\n"
                "                                --request-rate), linearly or as A (B/A)^(t/D); arrivals are\n"
                "                                drawn exactly from the ramp (docs/scheduling.md). D: the\n"
                "                                whole run (a count's expected arrivals, else\n"
                "                                --benchmark-duration) unless given below\n"), /* vLLM */
    OPT("ramp-up-start-rps", OPT_RAMP_START_RPS, ARG, ECHO_IF(ramp),
        NUM(ramp_start_rps, "requests/s, 0 or more", 0, false, MAX_RATE), GIVEN(ramp_start_given),
        .help_in = "ramp-up-strategy"), /* vLLM */
    OPT("ramp-up-end-rps", OPT_RAMP_END_RPS, ARG, NO_ECHO("the rate the ramp ends at: request_rate"),
        .help_in = "ramp-up-strategy"), /* vLLM */
    OPT("request-rate-ramp-duration", OPT_RATE_RAMP_DURATION, ARG, ECHO_IF(ramp),
        NUM(ramp_duration_s, "seconds, above 0", 0, true, 1e7), GIVEN(ramp_dur_given),
        .help = "      --request-rate-ramp-duration D\n"
                "                                AIPerf's: the rate ramps over D seconds (linearly from\n"
                "                                --ramp-up-start-rps, default 0) then holds --request-rate.\n"
                "                                Requests intended inside the ramp are measured and marked\n"
                "                                \"ramp\": true in the JSONL\n"), /* AIPerf */
    OPT("concurrency-ramp-duration", OPT_CONCURRENCY_RAMP_DURATION, ARG, .flags = SG_OPT_ECHO_ZERO_NULL,
        NUM(concurrency_ramp_s, "seconds, above 0", 0, true, 1e7),
        .help = "      --concurrency-ramp-duration D\n"
                "                                AIPerf's: the closed loop's --concurrency slots open one\n"
                "                                by one, evenly over D seconds (the first at the start)\n"), /* AIPerf
                                                                                                              */
    OPT("request-cancellation-rate", OPT_CANCEL_RATE, ARG,
        NUM(cancel_rate_pct, "a percentage from 0 to 100", 0, false, 100),
        .help = "      --request-cancellation-rate P, --request-cancellation-delay S\n"
                "                                AIPerf's cancellation test: P% of the requests (chosen by\n"
                "                                --random-seed) are cancelled S seconds (default 0) after\n"
                "                                their last byte was sent, unless answered by then: HTTP/1.1\n"
                "                                closes the connection, HTTP/2 and gRPC reset the stream\n"
                "                                (CANCEL). Counted apart (cancelled_by_test), in no error\n"
                "                                rate and no goodput\n"), /* AIPerf */
    OPT("request-cancellation-delay", OPT_CANCEL_DELAY, ARG, NUM(cancel_delay_s, "seconds, 0 or more", 0, false, 1e7),
        GIVEN(cancel_delay_given), .help_in = "request-cancellation-rate"), /* AIPerf */
    OPT("tools", OPT_TOOLS, ARG, STR(tools_file, "expected a JSON file of tool definitions"),
        .help = "      --tools FILE              tool definitions sent in every request (chat, responses,\n"
                "                                messages): a JSON array in OpenAI chat's shape, each turned\n"
                "                                into the API's own; a genai_perf line's \"tools\" replace them\n"),
    OPT("tool-choice", OPT_TOOL_CHOICE, ARG, STR(tool_choice, "expected auto, required, none or a tool's name"),
        .help = "      --tool-choice C           auto, required, none or a tool's name (default: not sent)\n"),
};
const size_t sg_opt_count = sizeof sg_opt_table / sizeof sg_opt_table[0];

const sg_opt_t *sg_opt_find(const char *name)
{
    for (size_t i = 0; i < sg_opt_count; i++) {
        const sg_opt_t *r = &sg_opt_table[i];
        if (strcmp(r->name, name) == 0)
            return r;
        for (const char *const *a = r->aliases; a && *a; a++)
            if (strcmp(*a, name) == 0)
                return r;
    }
    return NULL;
}

const char *sg_opt_echo_key(const sg_opt_t *r, char *buf, size_t cap)
{
    size_t i = 0;
    for (; r->name[i] && i + 1 < cap; i++)
        buf[i] = r->name[i] == '-' ? '_' : r->name[i];
    buf[i] = '\0';
    return buf;
}

const sg_opt_t *sg_opt_by_val(int val)
{
    for (size_t i = 0; i < sg_opt_count; i++)
        if (sg_opt_table[i].val == val)
            return &sg_opt_table[i];
    return NULL;
}

#define MAX_LONGS 256 /* names and aliases together; sg_opt_getopt stops short of overflowing (unit.test_config) */

const struct option *sg_opt_getopt(const char **shorts)
{
    static struct option longs[MAX_LONGS + 1];
    static char short_str[64];
    if (!longs[0].name) {
        size_t n = 0, ns = 0;
        short_str[ns++] = ':';
        for (size_t i = 0; i < sg_opt_count; i++) {
            const sg_opt_t *r = &sg_opt_table[i];
            if (n < MAX_LONGS)
                longs[n++] = (struct option){r->name, r->has_arg, NULL, r->val};
            for (const char *const *a = r->aliases; a && *a; a++)
                if (n < MAX_LONGS)
                    longs[n++] = (struct option){*a, r->has_arg, NULL, r->val};
            if (r->short_name && ns + 3 < sizeof short_str) {
                short_str[ns++] = r->short_name;
                if (r->has_arg == required_argument)
                    short_str[ns++] = ':';
            }
        }
        short_str[ns] = '\0';
    }
    if (shorts)
        *shorts = short_str;
    return longs;
}

/*
 * surge profile --help: the rows' help blocks in this order, with the text between them (headings, a section's
 * prose, and what no one row says). A row listed here prints its .help; every row with .help is listed once
 * (unit.test_config), so a new option shows up in --help by getting a row, help and a place here.
 */
static const struct {
    const char *text; /* printed as it is */
    const char *row;  /* or: this row's .help */
} help_layout[] = {
    {"Usage: surge profile -m MODEL [options]\n"
     "\n"
     "Sends OpenAI-compatible requests to an inference server and reports time to first token,\n"
     "inter-token latency, request latency, sequence lengths, throughput and goodput. Flags keep\n"
     "GenAI-Perf's names (and AIPerf's or vLLM's where GenAI-Perf has none); only full names and their\n"
     "aliases (docs/cli.md) are taken: a prefix of a flag is an unknown option.\n"
     "\n"
     "Endpoint options:\n",
     NULL},
    {NULL, "model"},
    {NULL, "model-selection-strategy"},
    {NULL, "url"},
    {NULL, "url-strategy"},
    {NULL, "service-kind"},
    {NULL, "backend"},
    {NULL, "endpoint-type"},
    {NULL, "endpoint"},
    {NULL, "batch-size"},
    {NULL, "rankings-passages-mean"},
    {NULL, "rankings-query-prompt-token-mean"},
    {NULL, "streaming"},
    {NULL, "http2"},
    {NULL, "max-connections"},
    {NULL, "local-address"},
    {NULL, "header"},
    {NULL, "api-key"},
    {NULL, "cacert"},
    {NULL, "insecure"},
    {NULL, "cert"},
    {"\n"
     "Load options (without --concurrency or --request-rate: --concurrency 1):\n",
     NULL},
    {NULL, "concurrency"},
    {NULL, "request-rate"},
    {NULL, "request-distribution"},
    {NULL, "burstiness"},
    {NULL, "max-concurrency"},
    {NULL, "ramp-up-strategy"},
    {NULL, "request-rate-ramp-duration"},
    {NULL, "concurrency-ramp-duration"},
    {NULL, "request-cancellation-rate"},
    {NULL, "request-count"},
    {NULL, "benchmark-duration"},
    {NULL, "benchmark-grace-period"},
    {NULL, "warmup-request-count"},
    {NULL, "request-timeout"},
    {NULL, "random-seed"},
    {NULL, "workers"},
    {"\n", NULL},
    {NULL, "slice-duration"},
    {NULL, "measurement-interval"},
    {NULL, "stability-percentage"},
    {NULL, "max-trials"},
    {NULL, "stall-threshold-ms"},
    {"\n"
     "SLO verdicts (docs/metrics.md, SLO verdicts):\n",
     NULL},
    {NULL, "slo"},
    {NULL, "confidence-level"},
    {"\n"
     "Sweeps and the capacity search (docs/capacity.md):\n"
     "      --concurrency N1,N2,...   a sweep (AIPerf's lists): each value is a load point of its\n"
     "      --request-rate R1,R2,...  own, run in turn with fresh connections and metrics, files in\n"
     "                                <artifact dir>/concurrency_N/ (request_rate_R/), one row per\n"
     "                                point in sweep_summary.json and .csv and on the console\n",
     NULL},
    {NULL, "concurrency-range"},
    {NULL, "parameter-sweep-cooldown-seconds"},
    {NULL, "search"},
    {NULL, "search-range"},
    {NULL, "search-precision"},
    {NULL, "search-trials"},
    {NULL, "search-max-trials"},
    {"\n"
     "Repeated runs (AIPerf's multi-run; docs/capacity.md, Repeated runs):\n",
     NULL},
    {NULL, "num-profile-runs"},
    {"      --confidence-level C      the interval's level, 0 < C < 1 (default 0.95); also every\n"
     "                                --slo verdict's\n",
     NULL},
    {NULL, "profile-run-cooldown-seconds"},
    {NULL, "profile-run-disable-warmup-after-first"},
    {NULL, "set-consistent-seed"},
    {"\n"
     "Input options:\n",
     NULL},
    {NULL, "synthetic-input-tokens-mean"},
    {NULL, "synthetic-input-tokens-stddev"},
    {NULL, "num-prompts"},
    {NULL, "cache-bust"},
    {NULL, "image-width-mean"},
    {NULL, "image-width-stddev"},
    {NULL, "image-format"},
    {NULL, "image-batch-size"},
    {NULL, "audio-length-mean"},
    {NULL, "audio-sample-rates"},
    {NULL, "audio-depths"},
    {NULL, "audio-num-channels"},
    {NULL, "audio-batch-size"},
    {NULL, "audio-format"},
    {NULL, "num-prefix-prompts"},
    {NULL, "prefix-prompt-length"},
    {NULL, "output-tokens-mean"},
    {NULL, "output-tokens-stddev"},
    {NULL, "ignore-eos"},
    {NULL, "output-tokens-mean-deterministic"},
    {NULL, "extra-inputs"},
    {NULL, "tools"},
    {NULL, "tool-choice"},
    {NULL, "tokenizer"},
    {NULL, "input-file"},
    {NULL, "input-format"},
    {"\n"
     "Multi-turn sessions (docs/sessions.md; on when the turn mean is above 1 or the file is\n"
     "multi_turn): each turn carries the history with the server's real replies, is sent its\n"
     "delay after the previous turn ended, and carries X-Session-ID and X-Correlation-ID.\n",
     NULL},
    {NULL, "conversation-num"},
    {NULL, "conversation-turn-mean"},
    {NULL, "conversation-turn-stddev"},
    {NULL, "conversation-turn-delay-mean"},
    {NULL, "conversation-turn-delay-stddev"},
    {NULL, "conversation-turn-delay-ratio"},
    {"\n", NULL},
    {NULL, "fixed-schedule"},
    {NULL, "fixed-schedule-speedup"},
    {NULL, "isl-block-size"},
    {"\n"
     "Output options:\n",
     NULL},
    {NULL, "artifact-dir"},
    {NULL, "overwrite"},
    {NULL, "profile-export-file"},
    {NULL, "export-level"},
    {NULL, "goodput"},
    {NULL, "max-error-rate"},
    {NULL, "progress"},
    {NULL, "server-metrics-url"},
    {NULL, "server-metrics-interval"},
    {NULL, "gpu-telemetry"},
    {NULL, "generate-plots"},
    {NULL, "show-trace-timing"},
    {NULL, "world-size"},
    {NULL, "rank"},
    {NULL, "coordinator"},
    {NULL, "coordinator-timeout"},
    {NULL, "io-backend"},
    {NULL, "timestamps"},
    {NULL, "coalesce-us"},
    {NULL, "verbose"},
    {NULL, "version"},
    {NULL, "help"},
    {"\n"
     "Input sequence length (ISL):\n"
     "  With --tokenizer, synthetic prompts are cut from English prose built into surge and hold\n"
     "  exactly the asked number of tokens by that tokenizer's count of the prompt text; ISL is that\n"
     "  count. It is the content's tokens only: the server's chat template adds tokens surge cannot\n"
     "  know, so the server's usage.prompt_tokens (reported beside it) is higher for chat. Each\n"
     "  prompt starts at its own place in the text, so a prefix cache cannot shortcut them.\n"
     "  Without --tokenizer, prompts are built from surge's vocabulary of common English words that\n"
     "  GPT-family BPE tokenizers encode as one token each after a space, and ISL is the word count;\n"
     "  every prompt starts with three words spelling its index. Prompts from --input-file are\n"
     "  counted with the tokenizer, or in words without one.\n"
     "\n"
     "Output sequence length (OSL):\n"
     "  The server's usage.completion_tokens when it sends one; else, with --tokenizer, the\n"
     "  tokenizer's count of the output text (counted after the run, off the hot path); else the\n"
     "  number of content events. With --tokenizer and usage, both are kept and disagreements\n"
     "  are counted (osl_disagreement). Each request's source is in the JSONL (osl_source).\n"
     "\n"
     "Latency:\n"
     "  Latencies are measured from each request's intended start (coordinated omission\n"
     "  corrected): with --request-rate, the time its schedule gave it; with --concurrency, the\n"
     "  time its slot freed. The _from_send variants (time_to_first_token_from_send,\n"
     "  request_latency_from_send) measure from the actual send; the difference is reported as\n"
     "  schedule lag.\n"
     "\n"
     "Names in GenAI-Perf, AIPerf and vLLM (the full table: docs/metrics.md):\n"
     "  vLLM's TPOT is inter_token_latency, its ITL is inter_chunk_latency and its E2EL is\n"
     "  request_latency; TTFT, the throughputs and goodput keep GenAI-Perf's and AIPerf's names.\n"
     "  <stem>_surge.csv is laid out as GenAI-Perf's CSV, <stem>_surge.json as AIPerf's summary,\n"
     "  and inputs.json holds every request body sent, as GenAI-Perf writes it.\n"
     "\n"
     "Not supported (GenAI-Perf and perf_analyzer flags):\n"
     "  --input-dataset (download the data and give it with --input-file), and\n"
     "  arguments after -- (there is no perf_analyzer behind surge).\n"
     "\n"
     "Config files (docs/config.md):\n",
     NULL},
    {NULL, "config"},
    {"\n"
     "Other aliases: --batch-size-text and --prompt-batch-size (-b), --prompt-input-tokens-mean and\n"
     "  --prompt-input-tokens-stddev (--isl, --isl-stddev), --prompt-output-tokens-mean and\n"
     "  --prompt-output-tokens-stddev (--osl, --osl-stddev), --num-conversations (--conversation-num),\n"
     "  --prefix-prompt-pool-size (--num-prefix-prompts); --no-set-consistent-seed is refused (every\n"
     "  run is seeded: give each its own --random-seed).\n"
     "\n"
     "vLLM's `vllm bench serve` names (docs/cli.md, vLLM's names):\n"
     "  --base-url URL (--url), --random-input-len N (--isl), --random-output-len N (--osl),\n"
     "  --random-range-ratio 0 (fixed lengths; another ratio is refused: surge's lengths are normal,\n"
     "  give the stddev flags), --dataset-name random|sharegpt, --dataset-path FILE (--input-file),\n"
     "  --seed N (--random-seed), --result-dir DIR (--artifact-dir), --result-filename NAME\n"
     "  (--profile-export-file), --save-result and --save-detailed (surge always writes its files),\n"
     "  --disable-tqdm (--no-progress), --percentile-metrics and --metric-percentiles (checked: every\n"
     "  summary has ttft, tpot, itl and e2el at p1 to p99.9), --backend openai|openai-chat\n"
     "  (--endpoint-type completions|chat, with a note), -H Name=value. Where a name means something\n"
     "  else here, GenAI-Perf's and AIPerf's meaning stays and a line says what to use: --num-prompts\n"
     "  is distinct prompts (vLLM's is --request-count), --backend vllm is Triton's backend (vLLM's\n"
     "  is --endpoint-type completions), --max-concurrency needs --request-rate (vLLM's without a\n"
     "  rate is --concurrency).\n",
     NULL},
};

const char *sg_opt_help_layout(size_t i, bool *is_row)
{
    if (i >= sizeof help_layout / sizeof help_layout[0])
        return NULL;
    *is_row = help_layout[i].row != NULL;
    return help_layout[i].row ? help_layout[i].row : help_layout[i].text;
}

void sg_config_usage(FILE *out)
{
    bool is_row;
    const char *t;
    for (size_t i = 0; (t = sg_opt_help_layout(i, &is_row)); i++) {
        const sg_opt_t *r = is_row ? sg_opt_find(t) : NULL;
        fputs(is_row ? (r && r->help ? r->help : "") : t, out);
    }
}
