"""The parts' logical names, and the aliases that keep stacks deployed by earlier releases in place.

Renames ship with aliases: a part's or child's URN that an earlier release made is matched to the one this release
makes, so `pulumi up` replaces nothing (`tests/test_names.py` holds them against 0.1 to 0.3's previewed URNs).
"""

from __future__ import annotations

import pulumi

#: Logical names of the parts. Fixed on purpose: the URN already carries project and stack, and every child's name
#: (and so every auto-generated AWS name, `<logical name>-<7 hex>`) starts with its part's name, so a name that grew
#: with the configurable cluster name could overflow an AWS limit.
PART_NAMES = ("network", "cluster", "karpenter", "gpu", "devices", "storage", "ingress", "observability", "kubeflow")


def part_options(part: str, cluster_name: str, base: pulumi.ResourceOptions) -> pulumi.ResourceOptions:
    """Options of one part, with an alias to its name in 0.1 stacks (`<cluster>` for network and cluster,
    `<cluster>-<part>` for the others).

    Children inherit the alias (the engine swaps the parent's name at the start of each child's name), so a stack
    deployed with 0.1 keeps every resource, and every auto-generated physical name, across the rename.
    """
    assert part in PART_NAMES, part
    legacy = cluster_name if part in ("network", "cluster") else f"{cluster_name}-{part}"
    return pulumi.ResourceOptions.merge(base, pulumi.ResourceOptions(aliases=[pulumi.Alias(name=legacy)]))


def adopted_from_part(
    part: str, part_type: str, cluster_name: str, base: pulumi.ResourceOptions
) -> pulumi.ResourceOptions:
    """Options of a component whose children earlier releases made as children of the part `part` (of type
    `part_type`): each child keeps its name, and gets aliases to its URN under that part as 0.2 named it (`part`) and
    as 0.1 did (`<cluster>-<part>`, the child's name starting with it in place of `part`), so no child is replaced.

    A transformation, run by the SDK for every child, because a child's own alias to another parent is not
    multiplied by that parent's aliases (only by its present parent's)."""
    assert part in PART_NAMES, part
    legacy = f"{cluster_name}-{part}"

    def adopt(args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult | None:
        if args.type_.startswith("eksml:"):  # the adopting component itself is new
            return None
        assert args.name.startswith(part), (args.name, part)
        aliases: list[pulumi.Input[str] | pulumi.Alias] = [
            pulumi.Alias(parent=pulumi.create_urn(part, part_type)),
            pulumi.Alias(name=legacy + args.name[len(part) :], parent=pulumi.create_urn(legacy, part_type)),
        ]
        merged = pulumi.ResourceOptions.merge(args.opts, pulumi.ResourceOptions(aliases=aliases))
        return pulumi.ResourceTransformationResult(args.props, merged)

    return pulumi.ResourceOptions.merge(base, pulumi.ResourceOptions(transformations=[adopt]))
