"""Tests of jitr.relevance, jitr.data.relevance_reader and the relevance apps."""
