"""Thin absl mains wiring jitr together. Nothing imports this package."""
