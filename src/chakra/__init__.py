"""chakra: link, convert and simulate ML execution traces (Chakra ET compatible)."""

__version__ = "0.1.0"
