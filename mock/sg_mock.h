/*
 * `surge mock`: a small OpenAI-compatible LLM server for demos, integration tests and benchmarks. It runs on
 * the same io_uring loop as the client (one listening socket and one loop per worker thread, SO_REUSEPORT),
 * answers /v1/chat/completions and /v1/completions with synthetic tokens on a precise schedule (TTFT, then one
 * token every ITL), streamed over SSE or whole, and can inject errors, dropped connections and stalls.
 */
#ifndef SG_MOCK_H
#define SG_MOCK_H

/*
 * Run the mock server until SIGINT/SIGTERM or --exit-after. argv holds the arguments after "mock" (a leading
 * "mock" is skipped if present). Blocks SIGINT/SIGTERM in the calling process while it runs. Returns the process
 * exit status: 0 after a clean stop or --help, 1 when the server cannot start, 2 for bad flags.
 * Call from the main thread, once.
 */
int sg_mock_main(int argc, char **argv);

#endif
