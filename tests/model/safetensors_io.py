"""safetensors files with numpy, for the tests that write checkpoints (the
format: an 8-byte little-endian header length, a JSON header of each
tensor's dtype, shape and data offsets, then the data)."""
import json
import struct

import numpy as np

DTYPES = {"float32": "F32", "float16": "F16", "int32": "I32"}
NUMPY = {"F32": "<f4", "F16": "<f2", "I32": "<i4"}


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
    header, offset, blobs = {}, 0, []
    for name, t in tensors.items():
        blob = np.ascontiguousarray(t).tobytes()
        header[name] = {"dtype": DTYPES[t.dtype.name], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
