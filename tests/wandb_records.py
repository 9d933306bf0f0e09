"""Read the records of an offline wandb run file (``run-<id>.wandb``) in tests.

wandb 0.2x+ writes them from its Go core and ships no Python reader. The file is a 7-byte
``:W&B`` header followed by LevelDB log records (32 KiB blocks; each chunk has a 4-byte CRC, a
2-byte little-endian length and a type: 1 full, 2 first, 3 middle, 4 last) holding protobuf
``Record`` messages.
"""

from pathlib import Path

BLOCK = 32 * 1024
CHUNK_HEADER = 7


def read_records(path: str | Path) -> list:
    """Every ``wandb_internal_pb2.Record`` in the file, in order."""
    from wandb.proto import wandb_internal_pb2

    data = Path(path).read_bytes()
    assert data[:4] == b":W&B", f"{path} is not a wandb run file"
    records, pending, pos = [], b"", CHUNK_HEADER
    while pos + CHUNK_HEADER <= len(data):
        if BLOCK - pos % BLOCK < CHUNK_HEADER:  # a block's zero-padded tail
            pos += BLOCK - pos % BLOCK
            continue
        length, kind = int.from_bytes(data[pos + 4 : pos + 6], "little"), data[pos + 6]
        chunk = data[pos + CHUNK_HEADER : pos + CHUNK_HEADER + length]
        pos += CHUNK_HEADER + length
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
    return records
