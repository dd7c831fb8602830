"""Checks for developers (run by the test suite)."""
