"""Kueue: a ClusterQueue per team in one cohort, a ResourceFlavor per GPU pool, a LocalQueue per team namespace."""
