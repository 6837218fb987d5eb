"""harness: an evaluation and benchmarking harness for grammar-constrained LLM tool calling.

Importing this package is cheap on purpose: heavy dependencies (torch, xgrammar, llama.cpp,
pydantic-monty) load only inside the modules and commands that need them.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
