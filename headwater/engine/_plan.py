"""How the engine cuts a stream's partitions into checkpoints and lanes, and shares
Spark's task slots among them (the plan's model is :mod:`headwater.plan`)."""

from __future__ import annotations

from collections.abc import Sequence

from headwater.plan import CheckpointPlan
from headwater.sdk import Partition


def group_checkpoints(
    partitions: Sequence[Partition],
    *,
    first_index: int,
    per_checkpoint: int,
    lanes: int,
    overwrite: bool,
) -> tuple[CheckpointPlan, ...]:
    """Cut partitions into checkpoints and assign lanes (in turn, by position).

    An overwrite stream always has at least one checkpoint (an empty source
    must still empty the table).  Its checkpoints need no order among
    themselves: with more than one, each is staged and the run publishes them
    all in one commit at the end (:mod:`headwater.engine._sync`).
    """
    pieces = [list(partitions[i : i + per_checkpoint])
              for i in range(0, len(partitions), per_checkpoint)]
    if overwrite and not pieces:
        pieces = [[]]
    checkpoints = []
    for position, piece in enumerate(pieces):
        index = first_index + position
        lane = position % lanes
        checkpoints.append(CheckpointPlan(index=index, checkpoint_id=f"ckpt-{index}", lane=lane,
                                          partitions=tuple(piece)))
    return tuple(checkpoints)


def checkpoint_count(partition_count: int, per_checkpoint: int, overwrite: bool) -> int:
    count = -(-partition_count // per_checkpoint)
    return max(count, 1) if overwrite else count


def slot_shares(lanes: Sequence[Sequence[CheckpointPlan]], slots: int) -> dict[int, int]:
    """How many of ``slots`` Spark task slots each checkpoint can count on, by index.

    A stream's lanes run their checkpoints at the same time, so the k-th
    checkpoints of the lanes share the slots: each gets ``slots`` divided by how
    many lanes still have a k-th checkpoint (at least one).  A stream whose
    partitions are read as runs of one task per slot
    (:func:`~headwater.engine._task.task_count`) then gives each checkpoint that
    many tasks, each reading a longer run, instead of queueing ``slots`` tasks
    per lane behind each other: every task ended costs a slot about 0.2 s with
    nothing read (``bench/RESULTS.md``).  A lane's last checkpoints, running
    after the other lanes ran dry, get the freed slots.  The engine runs at most
    ``slots`` lanes at once, so no more than that share the slots.
    """
    shares: dict[int, int] = {}
    for lane in lanes:
        for k, checkpoint in enumerate(lane):
            running = min(sum(1 for other in lanes if len(other) > k), slots)
            shares[checkpoint.index] = max(1, slots // running)
    return shares
