"""The CrossGuard policy pack: `pulumi preview --policy-pack policies`. The rules live in components/policy_rules.py,
where the offline preview runs them too."""

from pulumi_policy import PolicyPack

from components.policy_pack import PACK_NAME, policies

PolicyPack(name=PACK_NAME, policies=policies())
