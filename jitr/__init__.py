"""jitr."""
