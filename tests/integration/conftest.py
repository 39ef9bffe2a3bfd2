"""Shared fixtures for the integration suite (filled in by the gateway work)."""
