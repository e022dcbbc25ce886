"""The VPC: public and private subnets per AZ, NAT, discovery tags, or an existing VPC tagged for the cluster."""

from .._lazy import lazy_exports

__getattr__ = lazy_exports(__name__, {"Network": "component", "NetworkArgs": "component"})
