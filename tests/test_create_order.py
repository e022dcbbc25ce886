"""Create-only dependencies (`components.cluster.create_order`): a value that waits for resources without making
the engine record an edge to them."""

from __future__ import annotations

import asyncio
import gc
import warnings
from collections.abc import Iterator
from typing import Any, cast

import pytest

from tests.conftest import offline_preview


@pytest.mark.stack
def test_a_create_only_dependency_keeps_the_values_own_edges_and_records_none_to_what_it_waited_for():
    import pulumi
    import pulumi_aws as aws

    from components.cluster.create_order import created_after

    def program():
        waited_for = aws.sqs.Queue("waited-for")
        vpc = aws.ec2.Vpc("vpc", cidr_block="10.0.0.0/16")
        aws.ec2.Subnet("gated", vpc_id=created_after(vpc.id, waited_for), cidr_block="10.0.1.0/24")
        after = pulumi.ResourceOptions(depends_on=[waited_for])
        aws.ec2.Subnet("plain", vpc_id=vpc.id, cidr_block="10.0.2.0/24", opts=after)

    inventory = offline_preview().mocks.run(program, project="p", stack="s", region="us-west-2", config={})
    queue, vpc = inventory.one("aws:sqs/queue:Queue"), inventory.one("aws:ec2/vpc:Vpc")
    gated = inventory.one("aws:ec2/subnet:Subnet", "gated")
    plain = inventory.one("aws:ec2/subnet:Subnet", "plain")
    # the value arrives (the subnet was registered once the queue existed) with its own edge to the VPC
    assert gated.inputs["vpcId"] == plain.inputs["vpcId"] == vpc.id
    assert vpc.urn in gated.dependencies
    # and destroy does not wait for the queue: no edge, as a depends_on would record
    assert queue.urn not in gated.dependencies
    assert queue.urn in plain.dependencies


class _Resource:
    """What `created_after` reads of a resource: its ID, as an Output."""

    def __init__(self, id_: Any) -> None:
        self.id = id_


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """A loop of the test's own, closed at the end as a program's is when it stops; the thread's loop before it is
    put back, for the next test's program."""
    try:
        before: asyncio.AbstractEventLoop | None = asyncio.get_event_loop()
    except RuntimeError:
        before = None
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield loop
    _let_go()
    loop.close()
    asyncio.set_event_loop(before)


def _let_go() -> None:
    """What the runtime holds on to from a program that stopped, let go as the next program starts, and collected."""
    import pulumi.runtime.settings

    pulumi.runtime.settings.SETTINGS.outputs.clear()
    gc.collect()


def test_a_program_stopped_while_a_gated_value_waits_leaves_no_coroutine_never_awaited(loop):
    """A refused config or a failed `pulumi up` stops the program with values still waiting; collecting them must
    not warn that a coroutine was never awaited (the Output awaits its parts one by one and never got past the
    first)."""
    import pulumi

    from components.cluster.create_order import created_after

    never = loop.create_future()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        waited_for = cast(pulumi.CustomResource, _Resource(pulumi.Output.from_input("id-1")))
        gated = created_after(pulumi.Output(never, never, never), waited_for)
        loop.run_until_complete(asyncio.sleep(0.01))
        del gated, never
        _let_go()
    assert [str(w.message) for w in caught if "never awaited" in str(w.message)] == []


def test_a_wait_that_fails_raises_its_error_from_the_value_and_reports_it_nowhere_else(loop, caplog):
    import pulumi

    from components.cluster.create_order import created_after

    failed = loop.create_future()
    failed.set_exception(RuntimeError("the queue was refused"))
    gated = created_after("value", cast(pulumi.CustomResource, _Resource(pulumi.Output(set(), failed, failed))))
    with pytest.raises(RuntimeError, match="the queue was refused") as raised:
        loop.run_until_complete(gated.future())
    loop.run_until_complete(asyncio.sleep(0.01))
    del gated, failed, raised  # the error's traceback holds the program's frames, and they the tasks
    _let_go()
    assert [r.getMessage() for r in caplog.records if "never retrieved" in r.getMessage()] == []
