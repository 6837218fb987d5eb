"""EBNF string literals as xgrammar reads them."""

from __future__ import annotations


def ebnf_literal(text: str) -> str:
    """``text`` as an EBNF string literal (quotes, backslashes and control characters escaped)."""
    out = ['"']
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


__all__ = ["ebnf_literal"]
