"""``harness serve``: an OpenAI/vLLM-compatible HTTP server in front of a servable engine (the registry's
``server`` entries: ``local`` and ``oracle``).

``server`` holds the app and its endpoints, ``chat_request`` reads a request's body, ``limits`` names the
server's bounds, ``connections`` bounds its HTTP connections and ``compile_guard`` compiles a new grammar
first in a worker process it can abandon. Nothing else in ``harness.engines`` imports this package: the
engines it serves are built through the registry (``build_served``).
"""
