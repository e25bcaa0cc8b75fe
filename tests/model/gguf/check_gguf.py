#!/usr/bin/env python3
"""GGUF reading and ggml dequantization against this file's own numpy code.

Usage: check_gguf.py GGUF_DUMP WORK_DIR

Writes GGUF files with numpy (random blocks of every tensor type we read,
metadata of every value type), runs gguf_dump on them and requires:
the metadata and tensor list exactly as written, and every dequantized value
bit-equal to the numpy dequantization below.  Then corrupt files: each must
be refused with exit status 1 and one line that names the fault.

The block layouts and the arithmetic (FP32 operations in ggml's order) follow
ggml's block definitions (ggml-common.h) and dequantize_row_* functions
(ggml-quants.c); this code shares nothing with the C++ reader.
"""
import json
import os
import struct
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is not installed")
    sys.exit(77)

F32 = np.float32

# name: (ggml type number, values per block, bytes per block)
TYPES = {
    "F32": (0, 1, 4),
    "F16": (1, 1, 2),
    "Q4_0": (2, 32, 18),
    "Q4_1": (3, 32, 20),
    "Q5_0": (6, 32, 22),
    "Q5_1": (7, 32, 24),
    "Q8_0": (8, 32, 34),
    "Q2_K": (10, 256, 84),
    "Q3_K": (11, 256, 110),
    "Q4_K": (12, 256, 144),
    "Q5_K": (13, 256, 176),
    "Q6_K": (14, 256, 210),
    "IQ4_NL": (20, 32, 18),
    "IQ4_XS": (23, 256, 136),
    "BF16": (30, 1, 2),
}

# Where each type keeps its FP16 scales (byte offsets in a block): random
# bytes there could be NaN or infinity, so they get finite values instead.
HALF_FIELDS = {
    "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q8_0": [0],
    "Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208],
    "IQ4_NL": [0], "IQ4_XS": [0],
}


# ---------------------------------------------------------------- dequantize
def half(b, offset):
    """The FP16 at byte `offset` of each block, as FP32, shape [blocks, 1]."""
    return np.ascontiguousarray(b[:, offset:offset + 2]).view("<f2").astype(F32)


def nibbles(q):
    return (q & 0xF).astype(np.int32), (q >> 4).astype(np.int32)


def deq_q4_0(b):
    lo, hi = nibbles(b[:, 2:18])
    return np.concatenate([lo - 8, hi - 8], axis=1).astype(F32) * half(b, 0)


def deq_q4_1(b):
    lo, hi = nibbles(b[:, 4:20])
    return np.concatenate([lo, hi], axis=1).astype(F32) * half(b, 0) + half(b, 2)


def fifth_bits(b, offset):
    word = np.ascontiguousarray(b[:, offset:offset + 4]).view("<u4").astype(np.int64)
    return ((word >> np.arange(32)) & 1).astype(np.int32)


def deq_q5_0(b):
    lo, hi = nibbles(b[:, 6:22])
    bits = fifth_bits(b, 2)
    q = np.concatenate([lo | (bits[:, :16] << 4), hi | (bits[:, 16:] << 4)], axis=1)
    return (q - 16).astype(F32) * half(b, 0)


def deq_q5_1(b):
    lo, hi = nibbles(b[:, 8:24])
    bits = fifth_bits(b, 4)
    q = np.concatenate([lo | (bits[:, :16] << 4), hi | (bits[:, 16:] << 4)], axis=1)
    return q.astype(F32) * half(b, 0) + half(b, 2)


def deq_q8_0(b):
    return np.ascontiguousarray(b[:, 2:34]).view(np.int8).astype(F32) * half(b, 0)


def two_bit_codes(qs):
    """qs [blocks, 64] -> codes [blocks, 16 sub-blocks, 16]: sub-block
    8 h + 2 s + p holds bits 2s of bytes 32 h + 16 p + (0..15)."""
    q = qs.reshape(-1, 2, 1, 2, 16).astype(np.int32)
    shifts = (2 * np.arange(4)).reshape(1, 1, 4, 1, 1)
    return ((q >> shifts) & 3).reshape(-1, 16, 16)


def deq_q2_k(b):
    scales = b[:, :16].astype(np.int32)[:, :, None]
    codes = two_bit_codes(b[:, 16:80])
    dl = half(b, 80)[:, :, None] * (scales & 0xF).astype(F32)
    ml = half(b, 82)[:, :, None] * (scales >> 4).astype(F32)
    return (dl * codes.astype(F32) - ml).reshape(-1, 256)


def deq_q3_k(b):
    hmask, packed = b[:, :32].astype(np.int32), b[:, 96:108].astype(np.int32)
    scales = np.empty((b.shape[0], 16), np.int32)
    for i in range(16):
        low = (packed[:, i % 8] >> (0 if i < 8 else 4)) & 0xF
        high = (packed[:, 8 + i % 4] >> (2 * (i // 4))) & 3
        scales[:, i] = (low | (high << 4)) - 32
    codes = two_bit_codes(b[:, 32:96]).reshape(-1, 2, 4, 2, 16)
    # The third bit of value l of part p sits in hmask[16 p + l], bit 4 h + s; clear means minus 4.
    bit = (4 * np.arange(2).reshape(1, 2, 1, 1, 1) + np.arange(4).reshape(1, 1, 4, 1, 1))
    third = (hmask.reshape(-1, 1, 1, 2, 16) >> bit) & 1
    q = (codes - np.where(third == 1, 0, 4)).reshape(-1, 16, 16)
    dl = half(b, 108)[:, :, None] * scales.astype(F32)[:, :, None]
    return (dl * q.astype(F32)).reshape(-1, 256)


def k_scales_mins(packed):
    """packed [blocks, 12] -> (scales, mins) [blocks, 8], 6 bits each."""
    p = packed.astype(np.int32)
    sc, mn = np.empty((p.shape[0], 8), np.int32), np.empty((p.shape[0], 8), np.int32)
    for j in range(8):
        if j < 4:
            sc[:, j], mn[:, j] = p[:, j] & 63, p[:, j + 4] & 63
        else:
            sc[:, j] = (p[:, j + 4] & 0xF) | ((p[:, j - 4] >> 6) << 4)
            mn[:, j] = (p[:, j + 4] >> 4) | ((p[:, j] >> 6) << 4)
    return sc, mn


def deq_q45_k(b, fifth):
    sc, mn = k_scales_mins(b[:, 4:16])
    codes = b[:, 48:176] if fifth else b[:, 16:144]
    q = codes.reshape(-1, 4, 1, 32).astype(np.int32)
    q = (q >> (4 * np.arange(2)).reshape(1, 1, 2, 1)) & 0xF  # [blocks, chunk, nibble, 32]
    if fifth:
        high = b[:, 16:48].astype(np.int32).reshape(-1, 1, 1, 32)
        bit = (2 * np.arange(4)).reshape(1, 4, 1, 1) + np.arange(2).reshape(1, 1, 2, 1)
        q = q + 16 * ((high >> bit) & 1)
    q = q.reshape(-1, 8, 32)
    dl = half(b, 0)[:, :, None] * sc.astype(F32)[:, :, None]
    ml = half(b, 2)[:, :, None] * mn.astype(F32)[:, :, None]
    return (dl * q.astype(F32) - ml).reshape(-1, 256)


def deq_q6_k(b):
    out = np.empty((b.shape[0], 256), F32)
    d = half(b, 208)
    scales = np.ascontiguousarray(b[:, 192:208]).view(np.int8).astype(F32)
    for h in range(2):
        ql = b[:, 64 * h:64 * h + 64].astype(np.int32)
        qh = b[:, 128 + 32 * h:160 + 32 * h].astype(np.int32)
        for s in range(4):
            low = (ql[:, 32 * (s % 2):32 * (s % 2) + 32] >> (0 if s < 2 else 4)) & 0xF
            q = (low | (((qh >> (2 * s)) & 3) << 4)) - 32
            scale = np.repeat(scales[:, 8 * h + 2 * s:8 * h + 2 * s + 2], 16, axis=1)
            out[:, 128 * h + 32 * s:128 * h + 32 * s + 32] = (d * scale) * q.astype(F32)
    return out


# The 16 levels of ggml's non-linear 4-bit types (kvalues_iq4nl).
IQ4_LEVELS = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], F32)


def iq4_values(qs):
    """16 bytes of nibbles per 32 values: the first 16 in the low nibbles, the next 16 in the high."""
    lo, hi = nibbles(qs)
    return IQ4_LEVELS[np.concatenate([lo, hi], axis=1)]


def deq_iq4_nl(b):
    return half(b, 0) * iq4_values(b[:, 2:18])


def deq_iq4_xs(b):
    """d, scales_h (uint16: 2 high bits per 32 values), scales_l[4] (a nibble each: 4 low bits),
    qs[128]; sub-block scale (6 bits) - 32."""
    d = half(b, 0)
    scales_h = np.ascontiguousarray(b[:, 2:4]).view("<u2").astype(np.int32)
    out = np.empty((b.shape[0], 256), F32)
    for ib in range(8):
        low = (b[:, 4 + ib // 2].astype(np.int32) >> (4 * (ib % 2))) & 0xF
        high = (scales_h[:, 0] >> (2 * ib)) & 3
        dl = d * ((low | (high << 4)) - 32).astype(F32)[:, None]
        out[:, 32 * ib:32 * ib + 32] = dl * iq4_values(b[:, 8 + 16 * ib:24 + 16 * ib])
    return out


def dequantize(type_name, raw, count):
    if type_name == "F32":
        return np.frombuffer(raw, "<f4").copy()
    if type_name == "F16":
        return np.frombuffer(raw, "<f2").astype(F32)
    if type_name == "BF16":
        return (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(F32)
    _, _, block_bytes = TYPES[type_name]
    b = np.frombuffer(raw, np.uint8).reshape(-1, block_bytes)
    fn = {"Q4_0": deq_q4_0, "Q4_1": deq_q4_1, "Q5_0": deq_q5_0, "Q5_1": deq_q5_1, "Q8_0": deq_q8_0,
          "Q2_K": deq_q2_k, "Q3_K": deq_q3_k, "Q4_K": lambda x: deq_q45_k(x, False),
          "Q5_K": lambda x: deq_q45_k(x, True), "Q6_K": deq_q6_k, "IQ4_NL": deq_iq4_nl, "IQ4_XS": deq_iq4_xs}[type_name]
    out = fn(b).reshape(-1)
    assert out.size == count and out.dtype == F32
    return out


# ---------------------------------------------------------------- writing
VALUE_TYPES = {"uint8": (0, "<B"), "int8": (1, "<b"), "uint16": (2, "<H"), "int16": (3, "<h"),
               "uint32": (4, "<I"), "int32": (5, "<i"), "float32": (6, "<f"), "bool": (7, "<B"),
               "string": (8, None), "array": (9, None), "uint64": (10, "<Q"), "int64": (11, "<q"),
               "float64": (12, "<d")}


def gguf_string(s):
    data = s.encode("utf-8")
    return struct.pack("<Q", len(data)) + data


def gguf_value(type_name, value):
    if type_name == "string":
        return gguf_string(value)
    if type_name == "array":
        element, items = value
        out = struct.pack("<IQ", VALUE_TYPES[element][0], len(items))
        return out + b"".join(gguf_value(element, v) for v in items)
    return struct.pack(VALUE_TYPES[type_name][1], value)


def gguf_bytes(metadata, tensors, version=3, alignment=32):
    """metadata: [(key, type, value)]; tensors: [(name, dims fastest first, type name or number, raw bytes)]."""
    header = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(metadata))
    for key, type_name, value in metadata:
        header += gguf_string(key) + struct.pack("<I", VALUE_TYPES[type_name][0]) + gguf_value(type_name, value)
    data, offsets = b"", []
    for _, _, _, raw in tensors:
        offsets.append(len(data))
        data += raw + b"\0" * (-len(raw) % alignment)
    for (name, dims, type_name, _), offset in zip(tensors, offsets):
        header += gguf_string(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        number = TYPES[type_name][0] if isinstance(type_name, str) else type_name  # a number: any type, even bad
        header += struct.pack("<IQ", number, offset)
    return header + b"\0" * (-len(header) % alignment) + data


def random_blocks(rng, type_name, count):
    """Raw bytes of `count` values of a type: random codes, finite random scales."""
    _, per_block, block_bytes = TYPES[type_name]
    if type_name == "F32":
        return rng.standard_normal(count).astype("<f4").tobytes()
    if type_name == "F16":
        return rng.standard_normal(count).astype("<f2").tobytes()
    if type_name == "BF16":
        return (rng.standard_normal(count).astype(F32).view(np.uint32) >> 16).astype("<u2").tobytes()
    blocks = rng.integers(0, 256, size=(count // per_block, block_bytes), dtype=np.uint8)
    for offset in HALF_FIELDS[type_name]:
        # Normal scales of both signs, and some subnormal ones (a real file's smallest).
        scales = (rng.standard_normal(blocks.shape[0]) * 0.05).astype("<f2")
        scales[::7] = np.float16(3e-7)
        blocks[:, offset:offset + 2] = scales.view(np.uint8).reshape(-1, 2)
    return blocks.tobytes()


# ---------------------------------------------------------------- checks
def run_dump(dump, path, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    return subprocess.run([dump, path, out_dir], capture_output=True, text=True)


def check_file(dump, work):
    rng = np.random.default_rng(20261203)
    tensors, expected = [], []
    for i, type_name in enumerate(TYPES):
        _, per_block, _ = TYPES[type_name]
        rows, row = 3, 2 * max(per_block, 32)
        raw = random_blocks(rng, type_name, rows * row)
        tensors.append((f"blk.{i}.{type_name.lower()}.weight", [row, rows], type_name, raw))
        expected.append(dequantize(type_name, raw, rows * row))
    # A 1-D and a 3-D tensor: shapes come back outermost first.
    raw = random_blocks(rng, "F32", 7)
    tensors.append(("output_norm.weight", [7], "F32", raw))
    expected.append(dequantize("F32", raw, 7))
    raw = random_blocks(rng, "Q8_0", 32 * 2 * 3)
    tensors.append(("blk.0.ffn_gate_exps.weight", [32, 2, 3], "Q8_0", raw))
    expected.append(dequantize("Q8_0", raw, 32 * 2 * 3))
    metadata = [
        ("general.architecture", "string", "llama"),
        ("general.alignment", "uint32", 64),
        ("u8", "uint8", 250), ("i8", "int8", -5), ("u16", "uint16", 65000), ("i16", "int16", -30000),
        ("i32", "int32", -2000000000), ("u64", "uint64", 2 ** 63 + 5), ("i64", "int64", -(2 ** 62)),
        ("f32", "float32", 1.5), ("f64", "float64", -2.25), ("yes", "bool", 1), ("no", "bool", 0),
        ("unicode", "string", "héllo ▁wörld 🙂"),
        ("tokenizer.ggml.tokens", "array", ("string", ["<s>", "</s>", "▁a", ""])),
        ("tokenizer.ggml.scores", "array", ("float32", [0.0, -1.5, 2.0])),
        ("tokenizer.ggml.token_type", "array", ("int32", [1, 3, -1])),
        ("empty", "array", ("uint8", [])),
    ]
    path = os.path.join(work, "all_types.gguf")
    with open(path, "wb") as f:
        f.write(gguf_bytes(metadata, tensors, alignment=64))
    result = run_dump(dump, path, os.path.join(work, "out"))
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["version"] == 3 and doc["alignment"] == 64, (doc["version"], doc["alignment"])
    for key, type_name, value in metadata:
        got = doc["metadata"][key]
        assert got["type"] == type_name, (key, got)
        if type_name == "array":
            assert got["element_type"] == value[0], (key, got)
            assert got["value"] == list(value[1]), (key, got["value"])
        elif type_name == "bool":
            assert got["value"] == bool(value), (key, got)
        else:
            assert got["value"] == value, (key, got["value"], value)
    assert len(doc["metadata"]) == len(metadata)
    assert [t["name"] for t in doc["tensors"]] == [t[0] for t in tensors]
    for i, ((name, dims, type_name, _), want) in enumerate(zip(tensors, expected)):
        got_t = doc["tensors"][i]
        assert got_t["shape"] == list(reversed(dims)) and got_t["type"] == type_name, (name, got_t)
        got = np.fromfile(os.path.join(work, "out", f"{i}.f32"), "<f4")
        assert got.size == want.size, (name, got.size, want.size)
        if not np.array_equal(got.view(np.uint32), want.view(np.uint32)):
            bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
            raise AssertionError(f"{name} ({type_name}): {bad.size} values differ, first at {bad[0]}: "
                                 f"{got[bad[0]]!r} != {want[bad[0]]!r}")
    print(f"ok: {len(tensors)} tensors of {len(TYPES)} types bit-equal, {len(metadata)} metadata values")


def check_refused(dump, work):
    rng = np.random.default_rng(7)
    good_tensor = ("t.weight", [32, 2], "Q8_0", random_blocks(rng, "Q8_0", 64))
    good = gguf_bytes([("general.architecture", "string", "llama")], [good_tensor])
    cases = {
        "not GGUF": (b"GGML" + good[4:], 'does not start with "GGUF"'),
        "version 1": (good[:4] + struct.pack("<I", 1) + good[8:], "version 1"),
        "header cut": (good[:110], "ends early"),  # inside the tensor's offset
        "data cut": (good[:-40], "past the end of the file (truncated?)"),
        "IQ2_XXS": (gguf_bytes([], [("t.weight", [256, 1], 16, bytes(66))]), "GGUF tensor type IQ2_XXS"),
        "partial block": (gguf_bytes([], [("t.weight", [48, 1], 8, bytes(51))]), "not whole Q8_0 blocks of 32"),
        "huge string": (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 2 ** 60), "runs past the end"),
        "huge array": (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + gguf_string("a") + struct.pack("<IIQ", 9, 4, 2 ** 40),
                       "runs past the end"),
        "array of arrays": (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + gguf_string("a") +
                            struct.pack("<IIQI", 9, 9, 1, 0) + bytes(16), "an array of arrays"),
        "bad alignment": (gguf_bytes([("general.alignment", "uint32", 48)], []), "power of two"),
    }
    for name, (data, expected) in cases.items():
        path = os.path.join(work, "bad.gguf")
        with open(path, "wb") as f:
            f.write(data)
        result = run_dump(dump, path, os.path.join(work, "bad_out"))
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 1, (name, result.returncode, result.stderr)
        assert len(lines) == 1 and expected in lines[0] and path in lines[0], (name, result.stderr)
    print(f"ok: {len(cases)} corrupt files refused, each with one line naming the fault")


def main():
    dump, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    check_file(dump, work)
    check_refused(dump, work)


if __name__ == "__main__":
    main()
