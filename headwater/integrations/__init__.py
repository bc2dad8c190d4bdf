"""Bridges from other tools to Headwater (each behind its own optional extra)."""
