"""Unit tests of rmq.client."""
