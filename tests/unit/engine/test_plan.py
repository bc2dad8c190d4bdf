"""Grouping partitions into checkpoints and lanes, the task slots each checkpoint gets;
plans survive their JSON round trip."""

from __future__ import annotations

import json

from headwater.engine._plan import checkpoint_count, group_checkpoints, slot_shares
from headwater.plan import CheckpointPlan, ConfiguredStream, RunPlan, StreamPlan
from headwater.sdk import Partition

PARTS = [Partition("users", f"p{i}", {"start": i, "end": i + 1}) for i in range(7)]


def test_append_checkpoints_alternate_lanes_in_index_order() -> None:
    plan = group_checkpoints(PARTS, first_index=10, per_checkpoint=2, lanes=2, overwrite=False)
    assert [c.index for c in plan] == [10, 11, 12, 13]
    assert [c.lane for c in plan] == [0, 1, 0, 1]
    assert [len(c.partitions) for c in plan] == [2, 2, 2, 1]
    assert checkpoint_count(len(PARTS), 2, overwrite=False) == len(plan)


def test_overwrite_checkpoints_alternate_lanes_and_never_plan_nothing() -> None:
    # The first checkpoint's commit still comes first (the engine orders it), so the
    # second need not share its lane: it is read beside it.
    plan = group_checkpoints(PARTS, first_index=1, per_checkpoint=2, lanes=2, overwrite=True)
    assert [c.lane for c in plan] == [0, 1, 0, 1]
    empty = group_checkpoints([], first_index=5, per_checkpoint=2, lanes=2, overwrite=True)
    assert [(c.index, c.partitions) for c in empty] == [(5, ())]
    assert checkpoint_count(0, 2, overwrite=True) == 1
    assert group_checkpoints([], first_index=5, per_checkpoint=2, lanes=2, overwrite=False) == ()


def test_a_plan_reads_back_from_json_unchanged() -> None:
    stream = ConfiguredStream("users", "incremental", "append_dedup", "updated_at", ("id",))
    checkpoints: tuple[CheckpointPlan, ...] = group_checkpoints(
        PARTS, first_index=1, per_checkpoint=3, lanes=1, overwrite=False)
    plan = RunPlan("c", (StreamPlan(stream, {"slices": []}, 1, checkpoints,
                                    {"properties": {"id": {"type": "integer"}}}),))
    assert RunPlan.from_dict(json.loads(json.dumps(plan.to_dict()))) == plan


def test_replay_and_backfill_plans_keep_their_purpose_and_sync_plans_stay_as_before() -> None:
    stream = ConfiguredStream("users", "incremental", "append", "updated_at", ("id",))
    checkpoints = group_checkpoints(PARTS, first_index=4, per_checkpoint=7, lanes=1,
                                    overwrite=False)
    streams = (StreamPlan(stream, None, 1, checkpoints),)
    replay = RunPlan("c", streams, purpose="replay", replay_of="20260101T000000Z-abcdef")
    assert RunPlan.from_dict(json.loads(json.dumps(replay.to_dict()))) == replay
    assert not replay.moves_state
    sync = RunPlan("c", streams)
    assert "purpose" not in sync.to_dict() and sync.moves_state


def test_lanes_running_side_by_side_share_the_task_slots() -> None:
    plan = group_checkpoints(PARTS, first_index=0, per_checkpoint=2, lanes=2, overwrite=False)
    lanes = [[c for c in plan if c.lane == lane] for lane in (0, 1)]
    # Two lanes of two: each checkpoint gets half the slots, so a slot runs one long
    # task per round instead of two short ones queued behind each other.
    assert slot_shares(lanes, 4) == {0: 2, 1: 2, 2: 2, 3: 2}
    # A lane left alone at the end gets every slot.
    three = group_checkpoints(PARTS[:6], first_index=0, per_checkpoint=2, lanes=2,
                              overwrite=False)
    assert slot_shares([[c for c in three if c.lane == lane] for lane in (0, 1)], 2) \
        == {0: 1, 1: 1, 2: 2}
    # More lanes than slots: the engine runs only as many lanes at once as slots.
    assert slot_shares([[c] for c in plan], 2) == {0: 1, 1: 1, 2: 1, 3: 1}
    assert slot_shares([], 2) == {}
