"""The policy rules (pure), run by the CrossGuard pack in policies/ and by the offline preview."""
