"""Damaged copies of a ``.npz`` archive (a zip file): every entry's headers made to name a compression method, or
a flag, that its data does not have."""

import struct

#: (name, offset of the field in a central directory header, value); a local header holds the same field 2
#: bytes earlier.
DAMAGES = (
    ("an unknown compression method", 10, 99),
    ("deflate over stored data", 10, 8),
    ("bzip2 over stored data", 10, 12),
    ("lzma over stored data", 10, 14),
    ("the encryption flag", 8, 1),
    ("the compressed-patched-data flag", 8, 1 << 5),
)


def damaged_archives(raw: bytes) -> dict[str, bytes]:
    """``raw`` (a zip file's bytes) with each of :data:`DAMAGES` written into every entry's headers."""
    out = {}
    for name, field, value in DAMAGES:
        damaged = bytearray(raw)
        for signature, at in ((b"PK\x01\x02", field), (b"PK\x03\x04", field - 2)):
            start = damaged.find(signature)
            while start >= 0:
                struct.pack_into("<H", damaged, start + at, value)
                start = damaged.find(signature, start + 4)
        out[name] = bytes(damaged)
    return out
