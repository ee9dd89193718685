"""Write a tiny random-weight llama model (GGUF) for llama-server in the tests.

    python3 make-tiny-gguf.py GGUF_PY_DIR VOCAB.gguf OUT.gguf

GGUF_PY_DIR is llama.cpp's gguf-py (it needs numpy); VOCAB.gguf one of llama.cpp's models/ggml-vocab-*.gguf,
whose tokenizer.* keys are copied, so the server tokenizes as the real model family does. The weights are small
seeded random numbers: the text is gibberish, but every request runs the whole model, so the server's timing,
slots, streaming and usage are real. Requests send ignore_eos so that a response is exactly max_tokens long.
The file is written to OUT.gguf.tmp and renamed, so a half-written model is never taken for a whole one.
"""

import os
import sys

N_EMBD = 64
N_LAYER = 2
N_HEAD = 4
N_FF = 128
N_CTX_TRAIN = 8192


def main():
    if len(sys.argv) != 4:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    gguf_py, vocab_path, out = sys.argv[1:]
    sys.path.insert(0, gguf_py)
    import numpy as np
    from gguf import GGUFReader, GGUFValueType, GGUFWriter

    reader = GGUFReader(vocab_path)
    tmp = out + ".tmp"
    writer = GGUFWriter(tmp, "llama")
    n_vocab = 0
    for field in reader.fields.values():
        if not field.name.startswith("tokenizer."):
            continue
        kind = field.types[0]
        if kind == GGUFValueType.ARRAY:
            value = field.contents()
            writer.add_key_value(field.name, value, kind, field.types[-1])
            if field.name == "tokenizer.ggml.tokens":
                n_vocab = len(value)
        else:
            writer.add_key_value(field.name, field.contents(), kind)
    if not n_vocab:
        print("make-tiny-gguf: %s has no tokenizer.ggml.tokens" % vocab_path, file=sys.stderr)
        return 1
    # general.architecture is written by the constructor; the rest is what llama.cpp's loader requires
    writer.add_name("surge-tiny-random")
    writer.add_context_length(N_CTX_TRAIN)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(N_LAYER)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD)
    writer.add_rope_dimension_count(N_EMBD // N_HEAD)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(n_vocab)

    rng = np.random.default_rng(20240601)

    def rand(*shape):
        # numpy shapes are GGUF's dimensions reversed: (rows, cols) is ne = [cols, rows]
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    ones = np.ones(N_EMBD, dtype=np.float32)
    writer.add_tensor("token_embd.weight", rand(n_vocab, N_EMBD))
    writer.add_tensor("output_norm.weight", ones)
    writer.add_tensor("output.weight", rand(n_vocab, N_EMBD))
    for i in range(N_LAYER):
        blk = "blk.%d." % i
        writer.add_tensor(blk + "attn_norm.weight", ones)
        writer.add_tensor(blk + "attn_q.weight", rand(N_EMBD, N_EMBD))
        writer.add_tensor(blk + "attn_k.weight", rand(N_EMBD, N_EMBD))
        writer.add_tensor(blk + "attn_v.weight", rand(N_EMBD, N_EMBD))
        writer.add_tensor(blk + "attn_output.weight", rand(N_EMBD, N_EMBD))
        writer.add_tensor(blk + "ffn_norm.weight", ones)
        writer.add_tensor(blk + "ffn_gate.weight", rand(N_FF, N_EMBD))
        writer.add_tensor(blk + "ffn_up.weight", rand(N_FF, N_EMBD))
        writer.add_tensor(blk + "ffn_down.weight", rand(N_EMBD, N_FF))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
