"""What Headwater tells the platform around it: metrics and lineage.

Kept free of imports on purpose: each part (``lineage``, ``metrics``) is imported by
what uses it, and pulls in its own optional library only then.
"""
