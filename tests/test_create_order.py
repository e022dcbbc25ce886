"""Create-only dependencies (`components.cluster.create_order`): a value that waits for resources without making
the engine record an edge to them."""

from __future__ import annotations

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
