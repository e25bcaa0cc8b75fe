"""safetensors files with numpy, for the tests that write checkpoints (the
format: an 8-byte little-endian header length, a JSON header of each
tensor's dtype, shape and data offsets, then the data).  numpy has no
bfloat16 or FP8: a BF16 tensor is written from Bf16(values) and read as its
raw uint16 bits, an F8_E4M3 one written from F8E4M3(bytes)."""
import json
import struct

import numpy as np

DTYPES = {"float32": "F32", "float16": "F16", "int32": "I32", "int8": "I8", "int64": "I64", "bool": "BOOL"}
NUMPY = {"F32": "<f4", "F16": "<f2", "I32": "<i4", "I8": "i1", "I64": "<i8", "BF16": "<u2", "BOOL": "?"}


class Bf16:
    """float32 values to store as bfloat16, rounded to nearest even (as torch rounds)."""
    dtype_name = "BF16"

    def __init__(self, values):
        bits = np.ascontiguousarray(values, np.float32).view(np.uint32).astype(np.uint64)
        self.bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
        self.shape = self.bits.shape

    def values(self):
        return (self.bits.astype(np.uint32) << 16).view(np.float32)


class F8E4M3:
    """FP8 E4M3 codes (uint8 bytes) to store as F8_E4M3."""
    dtype_name = "F8_E4M3"

    def __init__(self, codes):
        self.bits = np.ascontiguousarray(codes, np.uint8)
        self.shape = self.bits.shape


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        a, b = e["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + a:8 + n + b], NUMPY[e["dtype"]]).reshape(e["shape"])
    return out


def write_safetensors(path, tensors):
    """Tensors laid out as the safetensors library lays them out: larger
    elements first, then by name, so that each starts aligned to its size."""
    header, offset, blobs = {}, 0, []

    def element_bytes(t):
        return 2 if isinstance(t, Bf16) else 1 if isinstance(t, F8E4M3) else t.dtype.itemsize
    for name, t in sorted(tensors.items(), key=lambda item: (-element_bytes(item[1]), item[0])):
        raw = isinstance(t, (Bf16, F8E4M3))
        dtype = t.dtype_name if raw else DTYPES[t.dtype.name]
        blob = (t.bits if raw else np.ascontiguousarray(t)).tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
