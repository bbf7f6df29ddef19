#!/usr/bin/env python3
"""Writes a tiny random llama-architecture GGUF model (about 1 MB) with PyPI's gguf package,
for exercising llama-bench and llama-perplexity end to end without downloading weights.
Its output is meaningless; only the code paths are real. Usage: tiny-model.py OUT.gguf"""
import sys

import numpy as np
import gguf

N_EMBD, N_HEAD, N_FF, N_LAYER, N_CTX = 64, 4, 128, 2, 512


def vocab():
    tokens, scores, types = ["<unk>", "<s>", "</s>"], [0.0, 0.0, 0.0], [2, 3, 3]
    for b in range(256):  # byte fallback, as SentencePiece models have
        tokens.append(f"<0x{b:02X}>")
        scores.append(0.0)
        types.append(6)
    pieces = ["\u2581"] + [chr(c) for c in range(ord("a"), ord("z") + 1)] + \
             ["\u2581" + w for w in ("the", "a", "and", "of", "to", "in", "was", "he", "it", "that")]
    for i, p in enumerate(pieces):
        tokens.append(p)
        scores.append(-float(i))
        types.append(1)
    return tokens, scores, types


def main(out):
    rng = np.random.default_rng(7)
    tokens, scores, types = vocab()
    w = gguf.GGUFWriter(out, "llama")
    w.add_name("vzcaps tiny test model")
    w.add_context_length(N_CTX)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_rope_dimension_count(N_EMBD // N_HEAD)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(0)  # all F32
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)

    def t(name, *shape):
        w.add_tensor(name, (rng.standard_normal(shape) * 0.05).astype(np.float32))

    n_vocab = len(tokens)
    t("token_embd.weight", n_vocab, N_EMBD)
    w.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    t("output.weight", n_vocab, N_EMBD)
    for i in range(N_LAYER):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            t(f"blk.{i}.{name}.weight", N_EMBD, N_EMBD)
        t(f"blk.{i}.ffn_gate.weight", N_FF, N_EMBD)
        t(f"blk.{i}.ffn_up.weight", N_FF, N_EMBD)
        t(f"blk.{i}.ffn_down.weight", N_EMBD, N_FF)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: tiny-model.py OUT.gguf")
    main(sys.argv[1])
