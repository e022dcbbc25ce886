"""Create-only dependencies: wait for resources on create without ordering their deletes.

Pulumi keeps one graph for both: a dependency makes a resource be created after what it depends on and deleted
before it, and `pulumi destroy` deletes that graph in levels, each resource as late as its longest chain of
dependencies allows (see `components.tools.preview.destroy_estimate`). An edge that only create needs, because what
it waits for goes with the EKS cluster (`deleted_with`, no delete call of its own), still lengthens that chain and
adds levels to every destroy. `created_after` keeps the wait and leaves the edge out.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pulumi


def created_after(value: Any, *resources: pulumi.CustomResource) -> pulumi.Output[Any]:
    """`value`, resolved only once every one of `resources` exists (their IDs are known), with `value`'s own
    dependencies but none on `resources`: a resource that takes it as an input is registered, and so created, after
    them, and the engine records no edge to them, so its delete does not wait for theirs.

    Use it only where the order on destroy does not matter (what `resources` are goes with the cluster)."""
    out = pulumi.Output.from_input(value)
    gate = pulumi.Output.all(out, *(resource.id for resource in resources)).apply(lambda values: values[0])
    # Started as tasks, not handed over as coroutines: the Output awaits them one by one, and a program that stops
    # while it waits (a refused config, a failed `pulumi up`) would leave the rest never awaited, which Python warns
    # of when it collects them.
    deps, data = asyncio.ensure_future(out.resources()), asyncio.ensure_future(gate.future())
    known, secret = asyncio.ensure_future(gate.is_known()), asyncio.ensure_future(gate.is_secret())
    # The Output awaits `data` first and raises gate's error from it; `known` and `secret` fail with the same error,
    # which is read here so it is not reported again as never retrieved.
    for repeat in (known, secret):
        repeat.add_done_callback(lambda task: task.cancelled() or task.exception())
    return pulumi.Output(deps, data, known, secret)
