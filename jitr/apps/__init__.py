"""Thin absl mains: flag parsing plus one library call each. Nothing imports this package."""
