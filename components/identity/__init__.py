"""IAM documents and the IRSA role every controller uses."""

from .._lazy import lazy_exports

__getattr__ = lazy_exports(__name__, {"IrsaRole": "irsa", "IrsaRoleArgs": "irsa"})
