#!/usr/bin/python3
"""Writes the tokenizer.json that transformers' LlamaConverter makes of a
Llama-2 SentencePiece tokenizer.model (legacy mode), padded to VOCAB_SIZE
with the '<extra_N>' tokens ../shared/peer/make_models.py puts in its GGUF
files, so that our server and llama-server cut the same prompts into the
same tokens.  The facts it follows (convert_slow_tokenizer.py): a BPE model
over the pieces with byte fallback and unk fusing; merges are every split
of a piece into two pieces, a piece's splits ordered by their halves' ids,
pieces in descending score; normalizer Prepend("▁") then Replace(" ", "▁");
no pre-tokenizer; decoder Replace("▁", " "), ByteFallback, Fuse, Strip one
leading space; "<s> $A" post-processing.  Needs Debian's python3-sentencepiece.

  /usr/bin/python3 bench/peer/sentencepiece_to_tokenizer_json.py tokenizer.model VOCAB_SIZE OUT_DIR"""
import json
import os
import sys

import sentencepiece as spm


def main():
    model_path, vocab_size, out_dir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    sp = spm.SentencePieceProcessor(model_file=model_path)
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    vocab = {p: i for i, p in enumerate(pieces)}
    scored = sorted(range(len(pieces)), key=lambda i: -sp.get_score(i))
    merges = []
    for i in scored:
        piece = pieces[i]
        splits = [(piece[:k], piece[k:]) for k in range(1, len(piece)) if piece[:k] in vocab and piece[k:] in vocab]
        merges.extend(sorted(splits, key=lambda pair: (vocab[pair[0]], vocab[pair[1]])))
    special = {sp.unk_id(), sp.bos_id(), sp.eos_id()}
    added = [{"id": i, "content": pieces[i], "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i in sorted(special)]
    for j in range(vocab_size - len(pieces)):  # literal text tokens, as USER_DEFINED in the GGUF
        added.append({"id": len(pieces) + j, "content": f"<extra_{j}>", "single_word": False, "lstrip": False,
                      "rstrip": False, "normalized": False, "special": False})
    bos = pieces[sp.bos_id()]
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                                                           {"type": "Replace", "pattern": {"String": " "},
                                                            "content": "\u2581"}]},
        "pre_tokenizer": None,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": bos, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {bos: {"id": bos, "ids": [sp.bos_id()], "tokens": [bos]}},
        },
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": pieces[sp.unk_id()], "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": vocab, "merges": [" ".join(m) for m in merges]},
    }
    with open(os.path.join(out_dir, "tokenizer.json"), "w") as f:
        json.dump(tokenizer, f, ensure_ascii=False)
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w") as f:
        json.dump({"add_bos_token": True, "add_eos_token": False, "bos_token": bos, "eos_token": pieces[sp.eos_id()],
                   "unk_token": pieces[sp.unk_id()], "legacy": True, "tokenizer_class": "LlamaTokenizer"}, f)


if __name__ == "__main__":
    main()
