"""Command-line entry points: each parses arguments, calls one library function, reports."""
