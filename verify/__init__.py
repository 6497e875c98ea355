"""Generators and property checks for EOWC executors: see the verification issue."""
