"""The CrossGuard policy pack: `pulumi preview --policy-pack policies`. The rules live in components/policy/,
where the offline preview runs them too."""

from pack import PACK_NAME, policies  # policies/pack.py: the pack runs with this folder on its path
from pulumi_policy import PolicyPack

PolicyPack(name=PACK_NAME, policies=policies())
