"""The client's slots: a parent's pages go before child calls already waiting."""

from __future__ import annotations

import asyncio

from headwater.sdk.http._slots import ADMITTED_PER_SLOT, Slots


async def _hold(slots: Slots, name: str, order: list[str], release: asyncio.Event) -> None:
    async with slots:
        order.append(name)
        await release.wait()


def test_a_call_not_deferred_takes_the_next_slot_before_waiting_children() -> None:
    async def scenario() -> list[str]:
        slots, order, go = Slots(1), [], asyncio.Event()
        holder = asyncio.ensure_future(_hold(slots, "first", order, go))
        await asyncio.sleep(0)
        children = [slots.defer(_hold(slots, f"child{n}", order, go)) for n in range(3)]
        await asyncio.sleep(0)
        parent = asyncio.ensure_future(_hold(slots, "parent page", order, go))
        await asyncio.sleep(0)
        assert slots.waiting() == 4 and slots.waiting_first() == 1 and slots.held() == 1
        go.set()
        await asyncio.gather(holder, parent, *children)
        return order

    assert asyncio.run(scenario()) == ["first", "parent page", "child0", "child1", "child2"]


def test_cancelled_waiters_leave_no_slot_taken() -> None:
    async def scenario() -> tuple[int, int]:
        slots, order, go = Slots(2), [], asyncio.Event()
        holders = [asyncio.ensure_future(_hold(slots, f"h{n}", order, go)) for n in range(2)]
        await asyncio.sleep(0)
        waiting = [slots.defer(_hold(slots, f"c{n}", order, go)) for n in range(3)]
        waiting.append(asyncio.ensure_future(_hold(slots, "p", order, go)))
        await asyncio.sleep(0)
        for task in waiting:
            task.cancel()
        go.set()
        await asyncio.gather(*holders, *waiting, return_exceptions=True)
        return slots.held(), slots.waiting()

    assert asyncio.run(scenario()) == (0, 0)


def test_deferred_tasks_run_a_few_per_slot_at_a_time() -> None:
    # A parent page of many records does not have every child's request built at once.
    async def scenario() -> int:
        slots, go = Slots(2), asyncio.Event()
        running = most = 0

        async def child() -> None:
            nonlocal running, most
            running += 1
            most = max(most, running)
            await go.wait()
            running -= 1

        tasks = [slots.defer(child()) for _ in range(20)]
        for _ in range(5):
            await asyncio.sleep(0)
        go.set()
        await asyncio.gather(*tasks)
        return most

    assert asyncio.run(scenario()) == ADMITTED_PER_SLOT * 2
