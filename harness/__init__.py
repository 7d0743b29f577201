"""The harness: runs conformance then timing across backends, renders result tables."""
