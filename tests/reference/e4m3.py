"""FP8 E4M3 ("e4m3fn": sign, 4 exponent bits of bias 7, 3 mantissa bits,
subnormals, no infinities, S.1111.111 NaN) in numpy, which has no FP8:
each byte's value, and the bytes of the numbers nearest given values, as
vLLM and the FP8 tools round (to nearest, ties to the even code, saturated
at +-448), written from that definition alone."""
import numpy as np


def e4m3_values():
    """The value of each byte 0..255 (NaN for the two NaN codes)."""
    b = np.arange(256)
    exponent, mantissa = (b >> 3) & 0xF, b & 7
    magnitude = np.where(exponent == 0, mantissa / 8 * 2.0 ** -6, (1 + mantissa / 8) * 2.0 ** (exponent - 7))
    values = np.where(b & 0x80, -magnitude, magnitude)
    values[(b & 0x7F) == 0x7F] = np.nan
    return values.astype(np.float32)


VALUES = e4m3_values()


def to_e4m3(x):
    """Bytes of the E4M3 numbers nearest x (ties to the even code), clamped to +-448."""
    positive = VALUES[:127]  # bytes 0..126 ascend
    a = np.minimum(np.abs(x).astype(np.float64), 448.0)
    hi = np.clip(np.searchsorted(positive, a), 1, 126)
    lo = hi - 1
    d_lo, d_hi = a - positive[lo], positive[hi] - a
    code = np.where(d_lo < d_hi, lo, np.where(d_hi < d_lo, hi, np.where(lo % 2 == 0, lo, hi)))
    return (code | np.where(x < 0, 0x80, 0)).astype(np.uint8)
