"""Facts about the host and a run's environment: CPUs, metadata, monitoring."""
