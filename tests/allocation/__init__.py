"""Tests of partition allocation (Redpanda's RFC and constraint allocators, rendezvous, DRF)."""
