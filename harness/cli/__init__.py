"""The ``harness`` command line: a thin layer over the library."""
