"""1,000,000 rows x 10 columns as an Arrow table (deterministic)."""
import numpy as np, pyarrow as pa
def make(n=1_000_000, start=0, seed=1):
    r = np.random.default_rng(seed)
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "a": pa.array(r.random(n)), "b": pa.array(r.random(n)), "c": pa.array(r.normal(size=n)),
        "d": pa.array(r.integers(0, 1_000_000, n, dtype=np.int32)),
        "e": pa.array(r.integers(0, 2**40, n)),
        "s1": pa.array(np.char.add("name-", (ids % 1000).astype(str)).tolist(), pa.string()),
        "s2": pa.array(np.char.add("city-", (ids % 97).astype(str)).tolist(), pa.string()),
        "s3": pa.array([f"{i:016x}" for i in ids.tolist()], pa.string()),
        "ts": pa.array((1_700_000_000_000_000 + ids * 1000).astype("datetime64[us]"), pa.timestamp("us", tz="UTC")),
    })
